"""XProf's real viewer on a TensorFlow profile tf_real.py left
(LOGDIR/session.json): XProf's server (loopback only) on a logdir holding
it, its trace viewer opened in headless Chromium (Debian's, driven over
the DevTools protocol, cdp.py), which must list kxprof's device process
and find every job event by name (its "Find Events" box: the host row's
and the device row's of each job). A screenshot is kept. PASS/FAIL lines.

    xprof_browser.py SESSION_JSON TMPDIR SCREENSHOT.png
"""

import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import cdp

fails = 0
SERVER = """
import sys
from xprof import server
server._get_wildcard_address = lambda port: "127.0.0.1"  # loopback only
sys.exit(server.main(sys.argv[1:]))
"""
FIND = """(function () {
  // Index loops: the viewer's page leaves NodeList without an iterator.
  function find(root) {
    const ins = root.querySelectorAll('input'), all = root.querySelectorAll('*');
    for (let i = 0; i < ins.length; i++)
      if (/Find/.test(ins[i].placeholder || '')) return ins[i];
    for (let i = 0; i < all.length; i++)
      if (all[i].shadowRoot) { const x = find(all[i].shadowRoot); if (x) return x; }
    return null;
  }
  const inp = find(document);
  if (!inp) return false;
  inp.focus();
  inp.value = %s;
  inp.dispatchEvent(new Event('input', {bubbles: true}));
  return true;
})()"""


def check(name, ok, detail=""):
    global fails
    if ok:
        print("PASS %s" % name)
    else:
        fails += 1
        print("FAIL %s: %s" % (name, detail))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    """The body of url, gunzipped when the server compressed it."""
    with urllib.request.urlopen(url, timeout=30) as r:
        body = r.read()
    return (gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body).decode()


def main():
    s = json.load(open(sys.argv[1]))
    tmp, shot = sys.argv[2], sys.argv[3]
    run = os.path.join(tmp, "xprof-logdir", "plugins", "profile", "run1")
    os.makedirs(run)
    shutil.copy(s["xplane"], run)
    host = os.path.basename(s["xplane"])[:-len(".xplane.pb")]
    issued = sum(c for (_, n, c) in s["jobs"] if n == s["job"])
    port = free_port()
    srv = subprocess.Popen([sys.executable, "-c", SERVER, "--logdir",
                            os.path.join(tmp, "xprof-logdir"), "--port", str(port)],
                           stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "xprof.log"), "w"))
    base = "http://127.0.0.1:%d" % port
    browser = None
    try:
        runs = None
        for _ in range(300):
            try:
                runs = json.loads(get(base + "/data/plugin/profile/runs"))
                break
            except OSError:
                time.sleep(0.1)
        check("xprof_server_lists_run", runs == ["run1"], "runs: %s" % runs)
        data = base + "/data/plugin/profile/data?run=run1&tag=trace_viewer@&host=" + host
        check("xprof_server_serves_jobs", s["job"] in get(data), "no %s in %s" % (s["job"], data))
        browser = cdp.Browser(shutil.which("chromium") or "/usr/bin/chromium", tmp)
        browser.call("Page.navigate", url=base + "/trace_viewer_index.html?is_streaming=false"
                     "&is_oss=true&trace_data_url=" + urllib.parse.quote(data, safe=""))
        text = ""
        for _ in range(240):
            text = browser.eval("document.body ? document.body.innerText : ''") or ""
            if "/device:CUSTOM:" in text:
                break
            time.sleep(0.25)
        check("xprof_viewer_device_process", "/device:CUSTOM:" in text and "/host:CPU" in text,
              "page text: %r" % text[:300])
        check("xprof_viewer_find_box", browser.eval(FIND % json.dumps(s["job"])) is True,
              "no Find Events box on the page")
        found = []
        for _ in range(120):
            found = re.findall(r"(\d+) of (\d+)", browser.eval("document.body.innerText") or "")
            if found:
                break
            time.sleep(0.25)
        # Each job is on its thread's host row and on the device's row of it.
        total = int(found[0][1]) if found else 0
        check("xprof_viewer_finds_jobs", total == 2 * issued,
              "found %s, %d %s issued" % (found, issued, s["job"]))
        browser.screenshot(shot)
        check("xprof_viewer_screenshot", os.path.getsize(shot) > 10000, shot)
    finally:
        if browser:
            browser.close()
        srv.terminate()
        srv.wait(30)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
