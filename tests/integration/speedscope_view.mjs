// Opens a profile in speedscope (npm package, its release build) in Debian's
// Chromium through playwright-core, as a user would: the page loads the file
// from #profileURL, served from disk by request interception (no server, no
// network). For each profile speedscope lists, it keeps a screenshot of the
// flame chart and of the sandwich view, and the sandwich table's text (the
// frame names and their times).
// usage: node speedscope_view.mjs NPM_DIR PROFILE OUT_DIR LABEL
// Prints one JSON object: {"errors": [...], "profiles": [{"title", "table"}]}.
// Exits 1 when the page never showed a profile (the page's text says why).
import { createRequire } from 'module';
import fs from 'fs';
import path from 'path';

const [, , npmDir, profile, outDir, label] = process.argv;
const { chromium } = createRequire(path.join(npmDir, 'package.json'))('playwright-core');
const release = path.join(npmDir, 'node_modules/speedscope/dist/release');
const types = { '.js': 'text/javascript', '.html': 'text/html', '.css': 'text/css', '.json': 'application/json' };

const userDir = fs.mkdtempSync(path.join(outDir, 'chromium-')); // a fresh profile each run
const ctx = await chromium.launchPersistentContext(userDir, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1400, height: 900 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
const errors = [];
const result = { errors, profiles: [] };
try {
  const page = await ctx.newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
  page.on('dialog', (d) => { errors.push('dialog: ' + d.message()); d.dismiss(); });
  await page.route('http://kxprof.test/**', (r) => {
    const u = new URL(r.request().url());
    const f = u.pathname === '/profile.json' ? profile : path.join(release, path.normalize(u.pathname));
    if (!fs.existsSync(f)) return r.fulfill({ status: 404, body: '' });
    return r.fulfill({ status: 200, body: fs.readFileSync(f), contentType: types[path.extname(f)] || 'application/octet-stream' });
  });
  await page.goto('http://kxprof.test/index.html#profileURL=' + encodeURIComponent('http://kxprof.test/profile.json'));
  // Loaded: the toolbar holds the view tabs, then the profile's name.
  const title = async () => (await page.innerText('body')).split('\n')[1] || '';
  try {
    await page.waitForFunction(() => {
      const l = document.body.innerText.split('\n');
      return l.length > 2 && l[0].includes('Sandwich') && l[2].includes('Export');
    }, null, { timeout: 30000 });
  } catch (e) {
    await page.screenshot({ path: path.join(outDir, label + '-failed.png') });
    result.page = (await page.innerText('body')).slice(0, 2000);
    console.log(JSON.stringify(result));
    process.exitCode = 1;
    throw e;
  }
  const m = (await title()).match(/\((\d+)\/(\d+)\)$/);
  const n = m ? +m[2] : 1;
  for (let i = 0; i < n; i++) {
    const t = await title();
    await page.screenshot({ path: path.join(outDir, `${label}-${i + 1}-time-order.png`) });
    await page.keyboard.press('3');
    await page.waitForFunction(() => document.body.innerText.includes('Symbol Name'), null, { timeout: 10000 });
    await page.screenshot({ path: path.join(outDir, `${label}-${i + 1}-sandwich.png`) });
    result.profiles.push({ title: t.replace(/ \(\d+\/\d+\)$/, ''), table: await page.innerText('body') });
    await page.keyboard.press('1');
    if (i + 1 < n) {
      await page.keyboard.press('n');
      await page.waitForFunction((old) => document.body.innerText.split('\n')[1] !== old, t, { timeout: 10000 });
    }
  }
  console.log(JSON.stringify(result));
} finally {
  await ctx.close();
  fs.rmSync(userDir, { recursive: true, force: true });
}
