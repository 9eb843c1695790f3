#!/usr/bin/env python3
"""Generates user/registry/ioctl_table.c (the ioctl name tables) from the ioctl spec,
scripts/ioctl-tables/ioctls.md (kept in the repository: the tables are
regenerated from a checkout, and a test checks the committed file is what this
script makes from it).

Usage: gen-ioctl-tables.py scripts/ioctl-tables/ioctls.md user/registry/ioctl_table.c
       (or `make ioctl-tables`)

Owns the translation of the spec's markdown tables (and the few ioctl lists the
spec gives as prose or bullets) into sorted C arrays. Every row is checked
against the _IOC encoding of its own columns (nr, dir, size, type), so a typo
in the spec fails the generation instead of producing a wrong name. Output is
deterministic: same input, same bytes. Python 3 standard library only.
"""

import hashlib
import re
import sys

IOC_NONE, IOC_WRITE, IOC_READ = 0, 1, 2
DIRS = {'_IO': IOC_NONE, '_IOW': IOC_WRITE, '_IOR': IOC_READ,
        '_IOWR': IOC_WRITE | IOC_READ}

# Table keying, mirrored by enum kx_tab_keying in user/registry/ioctl_table.h.
NR, CMD, RAW = 'KX_TAB_NR', 'KX_TAB_CMD', 'KX_TAB_RAW'

# Row flags, mirrored by KX_ENT_* in user/registry/ioctl_table.h.
ENT_NOSIZE = 1     # the spec gives no size: cmd carries size 0
ENT_SHADOWED = 2   # same cmd as an earlier row of the table, which names it

# Output tables, in output order: key, enum kx_driver, keying, ioctl type byte.
# NR tables are keyed on (type, nr) = cmd & 0xffff because these drivers
# dispatch on nr only and userspace built against other headers sends other
# sizes; CMD tables on the full cmd; RAW tables (UVM) on the plain integer.
TABLES = [
    ('drm', 'KX_DRV_DRM', NR, 0x64),
    ('amdgpu', 'KX_DRV_AMDGPU', NR, 0x64),
    ('i915', 'KX_DRV_I915', NR, 0x64),
    ('xe', 'KX_DRV_XE', NR, 0x64),
    ('nouveau', 'KX_DRV_NOUVEAU', NR, 0x64),
    ('msm', 'KX_DRV_MSM', NR, 0x64),
    ('panfrost', 'KX_DRV_PANFROST', NR, 0x64),
    ('panthor', 'KX_DRV_PANTHOR', NR, 0x64),
    ('v3d', 'KX_DRV_V3D', NR, 0x64),
    ('etnaviv', 'KX_DRV_ETNAVIV', NR, 0x64),
    ('lima', 'KX_DRV_LIMA', NR, 0x64),
    ('habanalabs', 'KX_DRV_HABANALABS', NR, 0x64),
    ('ivpu', 'KX_DRV_IVPU', NR, 0x64),
    ('qaic', 'KX_DRV_QAIC', NR, 0x64),
    ('amdxdna', 'KX_DRV_AMDXDNA', NR, 0x64),
    ('rocket', 'KX_DRV_ROCKET', NR, 0x64),
    ('ethosu', 'KX_DRV_ETHOSU', NR, 0x64),
    ('kfd', 'KX_DRV_KFD', NR, 0x4b),
    ('nvidia', 'KX_DRV_NVIDIA', NR, 0x46),
    ('nvidia-uvm', 'KX_DRV_NVIDIA_UVM', RAW, None),
    ('nvidia-modeset', 'KX_DRV_NVIDIA_MODESET', CMD, 0x6d),
    # Neuron reuses an nr for variants of one call that differ in size.
    ('neuron', 'KX_DRV_NEURON', NR, 0x4e),
    ('tenstorrent', 'KX_DRV_TENSTORRENT', CMD, None),
    ('gasket', 'KX_DRV_GASKET', CMD, 0xdc),
    ('vfio', 'KX_DRV_VFIO', CMD, 0x3b),
    ('kvm', 'KX_DRV_KVM', CMD, 0xae),
    ('loop', 'KX_DRV_LOOP', CMD, 0x4c),
    ('block', 'KX_DRV_BLOCK', CMD, None),
]
DRM_DRIVERS = [t[0] for t in TABLES[1:17]]

# Spec section heading (numbering stripped) -> what it holds. Checked in order.
SECTIONS = [
    (r'^DRM core\b', 'drm'),
    (r'^amdgpu\b', 'amdgpu'),
    (r'^AMD KFD\b', 'kfd'),
    (r'^i915\b', 'i915'),
    (r'^xe\b', 'xe'),
    (r'^nouveau\b', 'nouveau'),
    (r'^msm\b', 'msm'),
    (r'^panfrost\b', 'panfrost'),
    (r'^panthor\b', 'panthor'),
    (r'^v3d\b', 'v3d'),
    (r'^etnaviv\b', 'etnaviv'),
    (r'^lima\b', 'lima'),
    (r'^habanalabs\b', 'habanalabs'),
    (r'\bivpu\b', 'ivpu'),
    (r'\bqaic\b', 'qaic'),
    (r'\bamdxdna\b', 'amdxdna'),
    (r'\brocket\b', 'rocket'),
    (r'\bethosu\b', 'ethosu'),
    (r'^Frontend\b', 'nvidia'),
    (r'^UVM\b', 'nvidia-uvm'),
    (r'^AWS Neuron\b', 'neuron'),
    (r'^Tenstorrent\b', 'tenstorrent'),
    (r'^Google TPU\b', 'tpu'),
    (r'^KVM\b', 'kvm'),
    (r'^loop and block\b', 'loopblock'),
]

# Table header shapes (lower-cased cells).
SHAPE_STD = ['nr (full)', 'drv nr', 'macro', 'dir', 'arg type', 'size',
             'cmd (x86_64)', 'class']
SHAPE_NV = ['nr', 'macro', 'arg type', 'size', "cmd = _iowr('f',nr,size)",
            'class']
SHAPE_UVM = ['cmd (decimal)', 'cmd (hex)', 'macro', 'params struct size',
             'class']
SHAPE_NEURON = ['nr', 'macro', 'dir', 'size', 'cmd']
SHAPE_TT = ['nr', 'macro', 'class']
SHAPE_LOOP = ['cmd', 'macro', 'arg']
SHAPE_BLOCK = ['cmd', 'macro', 'dir/size']

HEX = re.compile(r'0x[0-9a-fA-F]+')


class SpecError(Exception):
    pass


def ioc(d, t, nr, size):
    return (d << 30) | (size << 16) | (t << 8) | nr


def ioc_fields(cmd):
    return (cmd >> 30) & 3, (cmd >> 8) & 0xff, cmd & 0xff, (cmd >> 16) & 0x3fff


def clean(cell):
    return cell.replace('**', '').replace('`', '').strip()


def lead_hex(cell):
    """Leading hex number of a cell, or None (for "-", "(depends on size)")."""
    m = re.match(r'\s*(0x[0-9a-fA-F]+)\b', clean(cell))
    return int(m.group(1), 16) if m else None


def int_or_none(cell):
    cell = clean(cell)
    return int(cell) if re.fullmatch(r'\d+', cell) else None


def parse_dir(cell, where):
    cell = clean(cell)
    if cell not in DIRS:
        raise SpecError('%s: bad dir %r' % (where, cell))
    return DIRS[cell]


def check_ioc(where, cmd, d=None, t=None, nr=None, size=None):
    """Fails when cmd does not encode the given column values."""
    cd, ct, cn, cs = ioc_fields(cmd)
    for what, want, got in (('dir', d, cd), ('type', t, ct), ('nr', nr, cn),
                            ('size', size, cs)):
        if want is not None and want != got:
            raise SpecError('%s: cmd 0x%08x has %s %#x, the row says %#x'
                            % (where, cmd, what, got, want))


class Row:
    def __init__(self, name, cmd, nosize=False):
        self.name = name
        self.cmd = cmd
        self.nosize = nosize


def parse_sections(lines):
    """Splits the spec into sections: (heading, body lines)."""
    sections = []
    h2 = None
    cur = None
    for line in lines:
        m = re.match(r'^(#{2,3})\s+(.*)$', line)
        if m:
            title = re.sub(r'^\d+(\.\d+)*\.?\s+', '', m.group(2).strip())
            if len(m.group(1)) == 2:
                h2 = title
            cur = {'title': title, 'h2': h2, 'lines': []}
            sections.append(cur)
        elif cur is not None:
            cur['lines'].append(line)
    return sections


def section_kind(title):
    for rx, kind in SECTIONS:
        if re.search(rx, title):
            return kind
    return None


def tables_of(lines):
    """Markdown tables in lines: list of (header cells, rows of cells)."""
    out = []
    block = []
    for line in lines + ['']:
        if line.startswith('|'):
            block.append(line)
            continue
        if block:
            cells = [[c.strip() for c in l.strip().strip('|').split('|')]
                     for l in block]
            if len(cells) < 2 or not all(re.fullmatch(r':?-+:?', c)
                                         for c in cells[1]):
                raise SpecError('malformed table starting %r' % block[0])
            for r in cells[2:]:
                if len(r) != len(cells[0]):
                    raise SpecError('row %r has %d cells, header %d'
                                    % (r, len(r), len(cells[0])))
            out.append(([c.lower() for c in cells[0]], cells[2:]))
            block = []
    return out


def rows_std(kind, rows, typ):
    """The common 8-column shape (DRM, drivers, KFD, KVM)."""
    out = []
    for r in rows:
        nr = lead_hex(r[0])
        name = clean(r[2])
        where = '%s %s' % (kind, name)
        if nr is None or not re.fullmatch(r'[A-Z][A-Z0-9_]+', name):
            raise SpecError('%s: bad row %r' % (kind, r))
        d = parse_dir(r[3], where)
        size = int_or_none(r[5])
        cmd = lead_hex(r[6])
        drvnr = clean(r[1])
        if drvnr != '-' and int(drvnr, 16) != nr - 0x40:
            raise SpecError('%s: drv nr %s != nr %#x - 0x40' % (where, drvnr, nr))
        if kind in DRM_DRIVERS and not 0x40 <= nr < 0xa0:
            raise SpecError('%s: driver nr %#x outside 0x40..0x9f' % (where, nr))
        if kind == 'drm' and 0x40 <= nr < 0xa0:
            raise SpecError('%s: core nr %#x inside the driver range' % (where, nr))
        if cmd is None:
            out.append(Row(name, ioc(d, typ, nr, size or 0), size is None))
            continue
        check_ioc(where, cmd, d, typ, nr, size)
        out.append(Row(name, cmd))
    return out


def rows_nvidia(rows):
    out = []
    for r in rows:
        nr = lead_hex(r[0])
        name = clean(r[1])
        m = re.search(r'\((\d+)\)', r[0])
        if nr is None or not m or int(m.group(1)) != nr:
            raise SpecError('nvidia: bad nr cell %r' % r[0])
        size = int_or_none(r[3])
        cmd = lead_hex(r[4])
        if cmd is None:
            # Defined escapes without a fixed size: all are _IOWR('F', nr, n).
            out.append(Row(name, ioc(3, 0x46, nr, size or 0), size is None))
            continue
        check_ioc('nvidia ' + name, cmd, 3, 0x46, nr, size)
        out.append(Row(name, cmd))
    return out


def rows_uvm(rows):
    out = []
    for r in rows:
        dec, hx, name = int_or_none(r[0]), lead_hex(r[1]), clean(r[2])
        if dec is None or dec != hx:
            raise SpecError('uvm %s: decimal %r != hex %r' % (name, r[0], r[1]))
        out.append(Row(name, dec))
    return out


def rows_neuron(rows):
    out = []
    for r in rows:
        m = re.fullmatch(r'(\d+) \((0x[0-9a-fA-F]+)\)', clean(r[0]))
        name = clean(r[1])
        if not m or int(m.group(1)) != int(m.group(2), 16):
            raise SpecError('neuron: bad nr cell %r' % r[0])
        nr = int(m.group(1))
        cmd = lead_hex(r[4])
        check_ioc('neuron ' + name, cmd, parse_dir(r[2], name), 0x4e, nr,
                  int_or_none(r[3]))
        out.append(Row(name, cmd))
    return out


def rows_tenstorrent(rows, title):
    # "all _IO (size 0, dir 0), so cmd = 0xFA00 | nr"; the magic is in the heading.
    m = re.search(r'MAGIC\s+(0x[0-9A-Fa-f]+)', title)
    if not m:
        raise SpecError('tenstorrent: no ioctl magic in the heading')
    magic = int(m.group(1), 16)
    return [Row(clean(r[1]), ioc(0, magic, int(clean(r[0])), 0)) for r in rows]


def rows_loop(rows):
    out = []
    for r in rows:
        cmd = lead_hex(r[0])
        check_ioc('loop ' + clean(r[1]), cmd, t=0x4c)
        out.append(Row(clean(r[1]), cmd))
    return out


def rows_block(rows):
    out = []
    for r in rows:
        cmds = [c.strip() for c in clean(r[0]).split(' / ')]
        names = [n.strip() for n in clean(r[1]).split(' / ')]
        if len(cmds) != len(names):
            raise SpecError('block: %d cmds for %d names in %r'
                            % (len(cmds), len(names), r))
        # "FS_IOC_GETFLAGS / SETFLAGS": later names may drop the first's prefix.
        prefix = names[0][:names[0].rfind('_') + 1]
        names = names[:1] + [n if '_' in n or not prefix else prefix + n
                             for n in names[1:]]
        m = re.match(r"(_IO[RW]*)\((0x[0-9a-fA-F]+|'.'),(\d+)", clean(r[2]))
        for c, n in zip(cmds, names):
            cmd = int(c, 16)
            if m and len(cmds) == 1:
                t = m.group(2)
                t = ord(t[1]) if t.startswith("'") else int(t, 16)
                check_ioc('block ' + n, cmd, DIRS[m.group(1)], t,
                          int(m.group(3)))
            out.append(Row(n, cmd))
    return out


def rows_habanalabs_legacy(lines):
    """The pre-accel 'H' ABI is given as one prose line: "Legacy ...: INFO 0x..."."""
    out = []
    for line in lines:
        if not line.startswith('Legacy'):
            continue
        for name, cmd in re.findall(r'\b([A-Z][A-Z_]+) (0x[0-9a-fA-F]{8})\b',
                                    line.split(':', 1)[1]):
            cmd = int(cmd, 16)
            check_ioc('habanalabs legacy ' + name, cmd, t=0x48)
            out.append(Row('HL_IOCTL_' + name, cmd))
    return out


def rows_nvkms(lines):
    out = []
    rx = re.compile(r"`(NVKMS_IOCTL_\w+)\s*=\s*(_IO[RW]*)\('(.)',\s*(\d+),"
                    r".*?`\s*=\s*(0x[0-9a-fA-F]+)")
    for line in lines:
        for name, d, t, nr, cmd in rx.findall(line):
            cmd = int(cmd, 16)
            check_ioc('nvkms ' + name, cmd, DIRS[d], ord(t), int(nr))
            out.append(Row(name, cmd))
    return out


def rows_kvm_newer(lines):
    """Bullets like "- `KVM_X` = 0x40a0ae49 (`_IOW(KVMIO,0x49,...)`)"."""
    out = []
    for line in lines:
        m = re.match(r'^- `(KVM_\w+)`', line)
        if not m:
            continue
        cmds = [int(h, 16) for h in HEX.findall(line) if len(h) >= 6]
        if not cmds:
            raise SpecError('kvm: no cmd in %r' % line)
        nr = re.search(r'_IO[RW]*\(KVMIO,(0x[0-9a-fA-F]+)', line)
        check_ioc('kvm ' + m.group(1), cmds[0], t=0xae,
                  nr=int(nr.group(1), 16) if nr else None)
        out.append(Row(m.group(1), cmds[0]))
    return out


def rows_tpu(lines):
    """Gasket and VFIO lists of the TPU section (bullets, not tables)."""
    gasket, vfio = [], []
    grx = re.compile(r"^\s*- (\w+) (_IO[RW]*)\((0x[0-9A-Fa-f]+),(\d+)"
                     r"(?:,(\w+))?\)=(0x[0-9a-fA-F]+)")
    in_vfio = False
    for line in lines:
        plain = clean(line)
        m = grx.match(plain)
        if m:
            name, d, t, nr, size, cmd = m.groups()
            cmd = int(cmd, 16)
            check_ioc('gasket ' + name, cmd, DIRS[d], int(t, 16), int(nr),
                      int(size) if size and size.isdigit() else None)
            gasket.append(Row('GASKET_IOCTL_' + name, cmd))
            continue
        if re.match(r'^- .*\(/dev/vfio/', plain):
            in_vfio = True
            continue
        if in_vfio and plain.startswith('- '):
            for name, cmd in re.findall(r'\b([A-Z][A-Z0-9_]+) (0x[0-9a-fA-F]{4})\b',
                                        plain):
                cmd = int(cmd, 16)
                # VFIO ioctls are all _IO(';', VFIO_BASE + n), size 0.
                check_ioc('vfio ' + name, cmd, 0, 0x3b, size=0)
                vfio.append(Row('VFIO_' + name, cmd))
    # The Type1-IOMMU calls reuse the device numbers 0x3b70..0x3b75 on the
    # container fd. The name cannot see the fd kind, so the IOMMU meaning (the
    # memory-relevant MAP_DMA/UNMAP_DMA) names the number and the device rows
    # stay in the table as shadowed aliases.
    vfio.sort(key=lambda r: not r.name.startswith('VFIO_IOMMU_'))
    return gasket, vfio


def collect(spec_lines):
    rows = {t[0]: [] for t in TABLES}
    typ = {t[0]: t[3] for t in TABLES}
    for sec in parse_sections(spec_lines):
        kind = section_kind(sec['title'])
        tables = tables_of(sec['lines'])
        if kind is None:
            for hdr, _ in tables:
                if 'macro' in hdr:
                    raise SpecError('ioctl table under unknown heading %r'
                                    % sec['title'])
            continue
        for hdr, body in tables:
            if hdr == SHAPE_STD and kind in typ:
                rows[kind] += rows_std(kind, body, typ[kind])
            elif hdr == SHAPE_NV and kind == 'nvidia':
                rows[kind] += rows_nvidia(body)
            elif hdr == SHAPE_UVM and kind == 'nvidia-uvm':
                rows[kind] += rows_uvm(body)
            elif hdr == SHAPE_NEURON and kind == 'neuron':
                rows[kind] += rows_neuron(body)
            elif hdr == SHAPE_TT and kind == 'tenstorrent':
                rows[kind] += rows_tenstorrent(body, sec['title'])
            elif hdr == SHAPE_LOOP and kind == 'loopblock':
                rows['loop'] += rows_loop(body)
            elif hdr == SHAPE_BLOCK and kind == 'loopblock':
                rows['block'] += rows_block(body)
            else:
                raise SpecError('unexpected table %r under %r' % (hdr, sec['title']))
        if kind == 'habanalabs':
            rows[kind] += rows_habanalabs_legacy(sec['lines'])
        elif kind == 'nvidia':
            rows['nvidia-modeset'] += rows_nvkms(sec['lines'])
        elif kind == 'kvm':
            rows[kind] += rows_kvm_newer(sec['lines'])
        elif kind == 'tpu':
            rows['gasket'], rows['vfio'] = rows_tpu(sec['lines'])
    for key, _, _, _ in TABLES:
        if not rows[key]:
            raise SpecError('no rows found for %s' % key)
    return rows


def sort_rows(rows, keying):
    """Sorted (key, cmd, flags, name) tuples; ties keep spec order."""
    out = []
    seen = {}
    for r in rows:
        key = r.cmd & 0xffff if keying == NR else r.cmd
        flags = ENT_NOSIZE if r.nosize else 0
        if r.cmd in seen:
            if seen[r.cmd] == r.name:
                raise SpecError('duplicate row %s 0x%08x' % (r.name, r.cmd))
            flags |= ENT_SHADOWED
        else:
            seen[r.cmd] = r.name
        out.append((key, r.cmd, flags, r.name))
    # Stable sort: among rows of one key the spec order decides ties, so the
    # first-listed variant is preferred when sizes do not tell them apart.
    out.sort(key=lambda e: e[0])
    return out


def render(spec_bytes, rows):
    h = hashlib.sha256(spec_bytes).hexdigest()
    o = []
    o.append('/* generated by scripts/gen-ioctl-tables.py from ioctls.md — do not edit */')
    o.append('/*')
    o.append(' * ioctl name tables, one per driver, sorted by key (see ioctl_table.h).')
    o.append(' * spec sha256: %s' % h)
    o.append(' */')
    o.append('#include "registry/ioctl_table.h"')
    o.append('')
    for key, _, keying, _ in TABLES:
        ident = key.replace('-', '_')
        o.append('static const struct kx_ioctl_ent tab_%s[] = {' % ident)
        for k, cmd, flags, name in sort_rows(rows[key], keying):
            o.append('\t{ 0x%08x, 0x%08x, %d, "%s" },' % (k, cmd, flags, name))
        o.append('};')
        o.append('')
    o.append('const struct kx_ioctl_tab kx_ioctl_tabs[] = {')
    for key, drv, keying, _ in TABLES:
        ident = key.replace('-', '_')
        o.append('\t{ "%s", %s, %s, tab_%s, sizeof(tab_%s) / sizeof(tab_%s[0]) },'
                 % (key, drv, keying, ident, ident, ident))
    o.append('};')
    o.append('const size_t kx_ioctl_ntabs = sizeof(kx_ioctl_tabs) / sizeof(kx_ioctl_tabs[0]);')
    o.append('')
    o.append('const struct kx_ioctl_tab *const kx_ioctl_tab_by_drv[KX_DRV_MAX] = {')
    for i, (_, drv, _, _) in enumerate(TABLES):
        o.append('\t[%s] = &kx_ioctl_tabs[%d],' % (drv, i))
    o.append('};')
    return '\n'.join(o) + '\n'


def main(argv):
    if len(argv) != 3:
        sys.stderr.write('usage: %s ioctls.md ioctl_table.c\n' % argv[0])
        return 2
    with open(argv[1], 'rb') as f:
        spec = f.read()
    try:
        rows = collect(spec.decode('utf-8').splitlines())
    except SpecError as e:
        sys.stderr.write('%s: %s: %s\n' % (argv[0], argv[1], e))
        return 1
    text = render(spec, rows)
    with open(argv[2], 'w', encoding='utf-8', newline='\n') as f:
        f.write(text)
    for key, _, _, _ in TABLES:
        sys.stderr.write('%-15s %3d rows\n' % (key, len(rows[key])))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
