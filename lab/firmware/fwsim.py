# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stateful simulator of the NVIDIA ConnectX NVconfig tools (MFT ``mlxconfig``, mstflint ``mstconfig``).

It answers the ``query``/``set``/``reset`` commands the way the real tools print them, from JSON
device records kept in a state directory, so that a module's parser and logic are tested against
the real text formats.  Stdlib only; written from the observed output formats, not from tool code.

Emulated tool::

    python3 fwsim.py [--flavor mft|mstflint] [-d DEV] [-e] [-y] [--force] [-j FILE] q|query [NAME ...]
    python3 fwsim.py [--flavor mft|mstflint] -d DEV [-e] [-y] [--force] s|set NAME=VALUE ...
    python3 fwsim.py [--flavor mft|mstflint] -d DEV [-y] r|reset
    python3 fwsim.py [--flavor mft|mstflint] -v|--version

Lab administration (not part of the emulated tools)::

    python3 fwsim.py admin [--state-dir DIR] init --model M --pci P [--functions N] [--mst PATH] [--name S] [--description S]
                                                  [--default N=V ...] [--set N=V ...] [--next N=V ...] [--flag k=v ...]
    python3 fwsim.py admin [--state-dir DIR] reboot | power-cycle | show [--pci P] | models | list
    python3 fwsim.py admin [--state-dir DIR] flag --pci P k=v ...

Environment: ``FWSIM_STATE_DIR`` (default ``/var/lib/roce-fabric-fwsim``), ``FWSIM_FLAVOR`` (default ``mft``),
``FWSIM_LAYOUT`` (a key of LAYOUTS: print as that tool version does, whatever the flavor).

State directory: ``devices/<pci>.json`` (one record per adapter: model, device_type, name, description,
device_id, pci, functions, mst, flags{...}, params{NAME: {default, current, next}}; arrays as lists),
``calls.jsonl`` (one line per tool invocation), ``boot.json`` ({reboots, power_cycles}), ``.lock`` (flock).

Like the real tools: failures exit 3 and an abort exits 2 (MLX_CFG_ERROR / MLX_CFG_ABORTED); ``-E-``
lines go to stdout; firmware that cannot read defaults (flag no_defaults / no_current) drops that column
and prints the "does not support" line after the table. Known difference: ``reset`` prints the device header.
"""

import argparse
import contextlib
import fcntl
import json
import os
import re
import sys
import tempfile
import time

DEFAULT_STATE_DIR = '/var/lib/roce-fabric-fwsim'
MELLANOX_VENDOR_ID = '0x15b3'

# Exit status: the real tools return their internal status enum (MLX_CFG_ABORTED=2, MLX_CFG_ERROR=3).
EXIT_OK = 0
EXIT_ERROR = 3
EXIT_ABORTED = 2

# --------------------------------------------------------------------------------------------
# Output layouts (data, so another tool version is one more entry).
# header_formats: keyed by the number of value columns (the set command adds a "New" column); 'set': the
#                 header of a set ("Next Boot" and "New") where it differs from a two-column query.
# row_prefix: str.format template with {mark} ('*' or ' ') and {ro} ('RO' or two spaces).
# separator: 'always' -> one space between value columns; 'overflow' -> only after a value
#            longer than value_width (printf("%-16s") + "print a space if the width exceeded").
# --------------------------------------------------------------------------------------------
LAYOUTS = {
    # mstflint 4.21 (and older MFT): "%-16s%-16s" device rows, 36-wide names, 16-wide values.
    'mstflint-4.21': {
        'dev_label_width': 16,
        'dev_value_width': 16,
        'header_formats': {
            1: '%-16s%38s',
            2: '%-16s%38s       %s',
            3: '%-16s%36s%16s%18s',
            4: '%-16s%36s%16s%18s       %s',
        },
        'row_prefix': '{mark}        ',
        'name_width': 36,
        'value_width': 16,
        'separator': 'overflow',
        'ro_marker': False,
    },
    # MFT 4.2x/4.3x mlxconfig: "%-20s%-20s" device rows, 8-char prefix with RO slot, 44-wide names,
    # 20-wide values always followed by one space (a longer value just pushes the next column).
    'mft-4.30': {
        'dev_label_width': 20,
        'dev_value_width': 20,
        'header_formats': {
            1: '%-52s%s',
            2: '%-52s%-20s %s',
            'set': '%-52s%s       %s',
            3: '%-52s%-20s %-20s %s',
            4: '%-52s%-20s %-20s %-20s %s',
        },
        'row_prefix': '{mark}{ro}     ',
        'name_width': 44,
        'value_width': 20,
        'separator': 'always',
        'ro_marker': True,
    },
}

# MFT mlxconfig 4.2x as published queries print it (a ConnectX-4 Lx and a ConnectX-6 VPI in the corpus) and
# mstconfig in a 2025 SR-IOV operator log: the table header five columns wider than mstflint's, same rows.
LAYOUTS['mft-4.2x-wide'] = dict(LAYOUTS['mft-4.30'], header_formats={
    1: '%-57s%s',
    2: '%-57s%-20s %s',
    'set': '%-57s%s       %s',
    3: '%-57s%-20s%-16s%s',
    4: '%-57s%-20s%-16s%-16s%s',
})

FLAVORS = {
    'mft': {
        'tool': 'mlxconfig',
        'layout': 'mft-4.30',
        'version': 'mlxconfig, mft 4.30.1-1210, built on Oct 12 2025, 15:03:20. Git SHA Hash: N/A',
        'list_all_devices': True,
    },
    'mstflint': {
        'tool': 'mstconfig',
        'layout': 'mstflint-4.21',
        'version': 'mstconfig, mstflint 4.21.0, Git SHA Hash: N/A',
        'list_all_devices': False,
    },
}

# --------------------------------------------------------------------------------------------
# Parameter database (database order = query output order).
# Kinds: BOOL | ENUM | INT; values: name->number (BOOL/ENUM); min/max: INT range, max may name a
# model attribute ('max_vfs', 'max_pf'); ro: read-only; size: array length (None = scalar).
# --------------------------------------------------------------------------------------------
BOOL_VALUES = {'False': 0, 'True': 1}
LINK_TYPES = {'IB': 1, 'ETH': 2, 'VPI': 3}
NUM_OF_TC = {'_8_TCs': 0, '_1_TCs': 1, '_2_TCs': 2, '_3_TCs': 3, '_4_TCs': 4, '_5_TCs': 5, '_6_TCs': 6, '_7_TCs': 7}
HOST_OR_ECPF = {'ECPF': 0, 'EXT_HOST_PF': 1}


def _param(ptype, default, values=None, pmin=0, pmax=None, ro=False, size=None):
    return {'type': ptype, 'default': default, 'values': values or {}, 'min': pmin, 'max': pmax, 'ro': ro, 'size': size}


PARAMS = [
    ('LINK_TYPE_P1', _param('ENUM', 2, LINK_TYPES)),
    ('LINK_TYPE_P2', _param('ENUM', 2, LINK_TYPES)),
    ('MEMIC_BAR_SIZE', _param('INT', 0, pmax=255)),
    ('MEMIC_SIZE_LIMIT', _param('ENUM', 1, {'DISABLED': 0, '_256KB': 1, '_512KB': 2, '_1024KB': 3})),
    ('ESWITCH_HAIRPIN_DESCRIPTORS', _param('INT', 128, pmax=65535, size=8)),
    ('ROCE_NEXT_PROTOCOL', _param('INT', 254, pmax=255)),
    ('PF_NUM_OF_VF_VALID', _param('BOOL', 0, BOOL_VALUES)),
    ('NUM_PF_MSIX_VALID', _param('BOOL', 1, BOOL_VALUES)),
    ('NUM_OF_VFS', _param('INT', 8, pmax='max_vfs')),
    ('NUM_OF_PF', _param('INT', 2, pmin=1, pmax='max_pf')),
    ('SRIOV_EN', _param('BOOL', 0, BOOL_VALUES)),
    ('NUM_VF_MSIX', _param('INT', 11, pmax=2047, ro=True)),
    ('PCI_DOWNSTREAM_PORT_OWNER', _param('ENUM', 0, {'DEVICE_DEFAULT': 0, 'HOST_0': 1, 'HOST_1': 2, 'HOST_2': 3, 'HOST_3': 4,
                                                     'EMBEDDED_CPU': 15}, size=16)),
    ('PCI_ATOMIC_MODE', _param('ENUM', 0, {'PCI_ATOMIC_DISABLED_EXT_ATOMIC_ENABLED': 0, 'PCI_ATOMIC_ENABLED_EXT_ATOMIC_DISABLED': 1})),
    ('ATS_ENABLED', _param('BOOL', 0, BOOL_VALUES)),
    ('INTERNAL_CPU_MODEL', _param('ENUM', 1, {'SEPARATED_HOST': 0, 'EMBEDDED_CPU': 1})),
    ('INTERNAL_CPU_PAGE_SUPPLIER', _param('ENUM', 0, HOST_OR_ECPF)),
    ('INTERNAL_CPU_ESWITCH_MANAGER', _param('ENUM', 0, HOST_OR_ECPF)),
    ('INTERNAL_CPU_IB_VPORT0', _param('ENUM', 0, HOST_OR_ECPF)),
    ('INTERNAL_CPU_OFFLOAD_ENGINE', _param('ENUM', 0, {'ENABLED': 0, 'DISABLED': 1})),
    ('ROCE_CC_PRIO_MASK_P1', _param('INT', 255, pmax=255)),
    ('CNP_802P_PRIO_P1', _param('INT', 6, pmax=7)),
    ('CNP_DSCP_P1', _param('INT', 48, pmax=63)),
    ('ROCE_CC_PRIO_MASK_P2', _param('INT', 255, pmax=255)),
    ('CNP_802P_PRIO_P2', _param('INT', 6, pmax=7)),
    ('CNP_DSCP_P2', _param('INT', 48, pmax=63)),
    ('DCBX_IEEE_P1', _param('BOOL', 1, BOOL_VALUES)),
    ('DCBX_WILLING_P1', _param('BOOL', 1, BOOL_VALUES)),
    ('DCBX_IEEE_P2', _param('BOOL', 1, BOOL_VALUES)),
    ('DCBX_WILLING_P2', _param('BOOL', 1, BOOL_VALUES)),
    ('NUM_OF_TC_P1', _param('ENUM', 0, NUM_OF_TC)),
    ('NUM_OF_PFC_P1', _param('INT', 8, pmax=8)),
    ('NUM_OF_TC_P2', _param('ENUM', 0, NUM_OF_TC)),
    ('NUM_OF_PFC_P2', _param('INT', 8, pmax=8)),
    ('KEEP_ETH_LINK_UP_P1', _param('BOOL', 1, BOOL_VALUES)),
    ('KEEP_ETH_LINK_UP_P2', _param('BOOL', 1, BOOL_VALUES)),
    ('ROCE_CONTROL', _param('ENUM', 2, {'DEVICE_DEFAULT': 0, 'ROCE_DISABLE': 1, 'ROCE_ENABLE': 2})),
    ('PCI_WR_ORDERING', _param('ENUM', 0, {'per_mkey': 0, 'force_relax': 1})),
    ('LEGACY_BOOT_PROTOCOL', _param('ENUM', 1, {'NONE': 0, 'PXE': 1, 'iSCSI': 2, 'Both': 3})),
    ('ADVANCED_PCI_SETTINGS', _param('BOOL', 0, BOOL_VALUES)),
    ('MAX_ACC_OUT_READ', _param('INT', 0, pmax=255)),
    ('SAFE_MODE_ENABLE', _param('BOOL', 1, BOOL_VALUES, ro=True)),
]
PARAM_DB = dict(PARAMS)
PARAM_ORDER = [name for name, _spec in PARAMS]

_COMMON = {
    'MEMIC_BAR_SIZE', 'MEMIC_SIZE_LIMIT', 'ROCE_NEXT_PROTOCOL', 'PF_NUM_OF_VF_VALID', 'NUM_PF_MSIX_VALID', 'NUM_OF_VFS',
    'NUM_OF_PF', 'SRIOV_EN', 'NUM_VF_MSIX', 'PCI_ATOMIC_MODE', 'ROCE_CC_PRIO_MASK_P1', 'CNP_802P_PRIO_P1', 'CNP_DSCP_P1',
    'DCBX_IEEE_P1', 'DCBX_WILLING_P1', 'NUM_OF_TC_P1', 'NUM_OF_PFC_P1', 'KEEP_ETH_LINK_UP_P1', 'ROCE_CONTROL',
    'PCI_WR_ORDERING', 'LEGACY_BOOT_PROTOCOL', 'ADVANCED_PCI_SETTINGS', 'MAX_ACC_OUT_READ', 'SAFE_MODE_ENABLE',
}
_PORT2 = {'ROCE_CC_PRIO_MASK_P2', 'CNP_802P_PRIO_P2', 'CNP_DSCP_P2', 'DCBX_IEEE_P2', 'DCBX_WILLING_P2', 'NUM_OF_TC_P2',
          'NUM_OF_PFC_P2', 'KEEP_ETH_LINK_UP_P2'}
_VPI = {'LINK_TYPE_P1', 'LINK_TYPE_P2'}
_DPU = {'INTERNAL_CPU_MODEL', 'INTERNAL_CPU_PAGE_SUPPLIER', 'INTERNAL_CPU_ESWITCH_MANAGER', 'INTERNAL_CPU_IB_VPORT0',
        'INTERNAL_CPU_OFFLOAD_ENGINE'}


def _model(device_type, device_id, vf_device_id, part, description, supported, max_vfs=127, max_pf=2, defaults=None):
    return {
        'device_type': device_type,
        'device_id': device_id,
        'vf_device_id': vf_device_id,
        'part_name': part,
        'description': description,
        'max_vfs': max_vfs,
        'max_pf': max_pf,
        'ports': 2,
        'vpi': 'LINK_TYPE_P1' in supported,
        'params': [name for name in PARAM_ORDER if name in supported],
        'defaults': defaults or {},
    }


# --------------------------------------------------------------------------------------------
# Real queries: the parameter rows of these models (names, order, defaults) are read from queries of real
# adapters in the project's corpus (tests/unit/plugins/module_utils/fixtures/mlxconfig, each headed by its
# source), so a simulated ConnectX-4 Lx lists what a real one lists, EXP_ROM_UEFI_x86_ENABLE included.
# PARAMS above stays the vocabulary: the value names of enums and the ranges and read-only flags of the
# parameters it knows; a parameter only the sample knows takes its type from how the sample prints it.
# --------------------------------------------------------------------------------------------
CORPUS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tests', 'unit', 'plugins',
                          'module_utils', 'fixtures', 'mlxconfig')
SAMPLES = {
    'ConnectX4LX': 'query_cx4lx_uefi_x86_mft.txt',
    'ConnectX5': 'query_cx5_mft411_next_boot.txt',
    'ConnectX6DX': 'query_cx6dx_mstconfig_full.txt',
}
SAMPLE_ROW_RE = re.compile(r'^[*\s]\s*(?:RO\s+)?([A-Za-z][A-Za-z0-9_]*)\s{2,}(\S.*?)\s*$')
SAMPLE_VALUE_RE = re.compile(r'^([A-Za-z0-9_.+-]+)\((\d+)\)$')
SAMPLE_ARRAY_RE = re.compile(r'^Array\[(\d+)\.\.(\d+)\]$')


def sample_rows(name, header=None):
    """``[(parameter, value text)]`` of a corpus query, in print order (the last column: Next Boot).

    ``header``: a dict that receives the device lines (``Name``, ``Description``) as the sample prints them.
    """
    rows = []
    in_table = False
    with open(os.path.join(CORPUS_DIR, name), encoding='utf-8') as handle:
        for line in handle:
            if line.startswith('%%'):
                continue
            label = line.split(':', 1)[0]
            if header is not None and not in_table and label in ('Name', 'Description'):
                header[label] = line.split(':', 1)[1].strip()
            if line.startswith('Configurations:'):
                in_table = True
                continue
            match = SAMPLE_ROW_RE.match(line.rstrip('\n')) if in_table else None
            if match:
                rows.append((match.group(1), match.group(2).split()[-1]))
    return rows


def sample_spec(value):
    """A parameter spec from how a real query prints its value (for names the vocabulary lacks)."""
    array = SAMPLE_ARRAY_RE.match(value)
    if array:
        return _param('INT', 0, pmax=0xffffffff, size=int(array.group(2)) - int(array.group(1)) + 1)
    named = SAMPLE_VALUE_RE.match(value)
    if named:
        if named.group(1) in BOOL_VALUES:
            return _param('BOOL', int(named.group(2)), BOOL_VALUES)
        return _param('ENUM', int(named.group(2)), {named.group(1): int(named.group(2))})
    return _param('INT', int(value, 0), pmax=0xffffffff)


def sample_default(spec, value):
    """The number a printed value stands for, or None for arrays and names the vocabulary does not know."""
    if SAMPLE_ARRAY_RE.match(value):
        return None
    named = SAMPLE_VALUE_RE.match(value)
    if named:
        number = int(named.group(2))
        return number if spec['type'] == 'INT' or number in spec['values'].values() else None
    return parse_int(value) if spec['type'] == 'INT' else None


def apply_sample(model):
    """Give ``model`` the rows of its real query: their order, and their printed values as defaults."""
    header = {}
    rows = sample_rows(model['sample'], header)
    if header.get('Name', 'N/A') != 'N/A':
        model['part_name'] = header['Name']
    if header.get('Description', 'N/A') != 'N/A':
        model['description'] = header['Description']
    for name, value in rows:
        if name not in PARAM_DB:
            PARAM_DB[name] = sample_spec(value)
        default = sample_default(PARAM_DB[name], value)
        if default is not None and name not in model['defaults']:
            model['defaults'][name] = default
    model['params'] = [name for name, _value in rows]
    model['vpi'] = 'LINK_TYPE_P1' in model['params']
    # The real query prints no RO marker on these rows (NUM_VF_MSIX, SAFE_MODE_ENABLE): settable on this model.
    model['not_ro'] = set(name for name, _value in rows if PARAM_DB[name]['ro'])
    return model


MODELS = {
    'ConnectX4LX': _model(
        'ConnectX4LX', 0x1015, 0x1016, 'MCX4121A-ACA_Ax',
        'ConnectX-4 Lx EN network interface card; 25GbE dual-port SFP28; PCIe3.0 x8; ROHS R6',
        _COMMON | _PORT2 | {'PCI_DOWNSTREAM_PORT_OWNER'}, max_vfs=64),
    'ConnectX5': _model(
        'ConnectX5', 0x1017, 0x1018, 'MCX516A-CCA_Ax',
        'ConnectX-5 EN network interface card; 100GbE dual-port QSFP28; PCIe3.0 x16; tall bracket; ROHS R6',
        _COMMON | _PORT2, max_vfs=64),
    'ConnectX6': _model(
        'ConnectX6', 0x101b, 0x101c, 'MCX653106A-HDA_Ax',
        'ConnectX-6 VPI adapter card; HDR IB (200Gb/s) and 200GbE; dual-port QSFP56; PCIe4.0 x16; tall bracket; ROHS R6',
        _COMMON | _PORT2 | _VPI | {'ATS_ENABLED', 'ESWITCH_HAIRPIN_DESCRIPTORS'},
        defaults={'LINK_TYPE_P1': 1, 'LINK_TYPE_P2': 1}),
    'ConnectX6DX': _model(
        'ConnectX6DX', 0x101d, 0x101e, 'MCX623106AN-CDA_Ax',
        'ConnectX-6 Dx EN adapter card; 100GbE; Dual-port QSFP56; PCIe 4.0 x16; No Crypto',
        _COMMON | _PORT2 | {'ATS_ENABLED', 'PCI_DOWNSTREAM_PORT_OWNER'}),
    'ConnectX7': _model(
        'ConnectX7', 0x1021, 0x101e, 'MCX755106AS-HEA_Ax',
        'NVIDIA ConnectX-7 HHHL Adapter Card; 200GbE (default mode) / NDR200 IB; Dual-port QSFP112; PCIe 5.0 x16 with x16 PCIe '
        'extension option; Crypto Disabled; Secure Boot Enabled',
        _COMMON | _PORT2 | _VPI | {'ATS_ENABLED', 'ESWITCH_HAIRPIN_DESCRIPTORS', 'PCI_DOWNSTREAM_PORT_OWNER'}, max_pf=4),
    'BlueField3': _model(
        'BlueField3', 0xa2dc, 0x101e, '900-9D3B6-00CV-AA0',
        'NVIDIA BlueField-3 B3220 P-Series FHHL DPU; 200GbE (default mode) / NDR200 IB; Dual-port QSFP112; PCIe Gen5.0 x16 '
        'with x16 PCIe extension option; 16 Arm cores; 32GB on-board DDR; integrated BMC; Crypto Enabled',
        _COMMON | _PORT2 | _VPI | _DPU | {'ATS_ENABLED', 'ESWITCH_HAIRPIN_DESCRIPTORS', 'PCI_DOWNSTREAM_PORT_OWNER'}, max_pf=4),
}

FLAG_DEFAULTS = {
    'no_defaults': False,
    'no_current': False,
    'livefish': False,
    'reset_level': 'reboot',
    'fail_set': None,
    'fail_query': None,
    'raw_enum_current': False,
    # Fault: a query of this device prints its header and then waits this many seconds, as a tool does whose
    # device stopped answering its register accesses (a wedged adapter, a firmware update in progress).
    'hang': 0,
    # What loads a burnt firmware image (flintsim.py) besides a live reset: 'reboot' (a warm reboot), or 'power_cycle'
    # (only a power cycle: an image that a warm reboot does not load, as on adapters whose firmware asks for a cold
    # boot after an update).
    'image_activation': 'reboot',
}
RESET_LEVELS = ('reboot', 'power_cycle')

PCI_RE = re.compile(r'^(?:([0-9a-fA-F]{1,4}):)?([0-9a-fA-F]{1,2}):([0-9a-fA-F]{1,2})\.([0-7])$')
NAME_RE = re.compile(r'^([A-Za-z0-9_]+)(?:\[(\d+)(?:\.\.(\d+))?\])?$')
INT_RE = re.compile(r'^(?:0[xX][0-9a-fA-F]+|[0-9]+)$')


class ToolError(Exception):
    """An error the emulated tool reports as one ``-E- <message>`` line."""


class AdminError(Exception):
    """An error of the admin interface."""


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------
def normalize_pci(text):
    """Return the canonical ``dddd:bb:dd.f`` form of a PCI address, or None."""
    match = PCI_RE.match(text or '')
    if not match:
        return None
    domain = int(match.group(1) or '0', 16)
    return '%04x:%02x:%02x.%x' % (domain, int(match.group(2), 16), int(match.group(3), 16), int(match.group(4), 16))


def param_max(spec, model):
    pmax = spec['max']
    if isinstance(pmax, str):
        return model[pmax]
    return pmax


def parse_int(text):
    if not INT_RE.match(text):
        return None
    return int(text, 0) if text[:2].lower() == '0x' else int(text, 10)


for _type, _sample in SAMPLES.items():
    MODELS[_type]['sample'] = _sample
    apply_sample(MODELS[_type])


def parse_value(spec, text, assignment):
    """Parse a user value the way mlxconfig does; return an int or raise ToolError."""
    if spec['type'] in ('BOOL', 'ENUM'):
        lowered = text.lower()
        for vname, number in spec['values'].items():
            if vname.lower() == lowered:
                return number
        number = parse_int(text)
        if number is not None and number in spec['values'].values():
            return number
        raise ToolError('Failed to parse %s: Unknown value %s' % (assignment, text))
    number = parse_int(text)
    if number is None:
        raise ToolError('Failed to parse %s: Cannot parse the value' % assignment)
    return number


def render_value(spec, value, raw=False):
    """Text of one scalar value as the tool prints it."""
    if value is None:
        return 'N/A'
    if spec['type'] == 'INT':
        return str(value)
    for vname, number in spec['values'].items():
        if number == value:
            return str(value) if raw else '%s(%d)' % (vname, value)
    return str(value)


def json_value(spec, value, raw=False):
    """Value as mlxconfig -j writes it: numbers as numbers, named values as 'NAME(n)'."""
    text = render_value(spec, value, raw)
    if value is None:
        return 'N/A'
    if text == str(value):
        return value
    return text


def array_label(spec):
    return 'Array[0..%d]' % (spec['size'] - 1)


def atomic_write_json(path, data):
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix='.tmp-', suffix='.json')
    try:
        with os.fdopen(fd, 'w') as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
            handle.write('\n')
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# --------------------------------------------------------------------------------------------
# State directory
# --------------------------------------------------------------------------------------------
class State:
    """JSON state: devices/<pci>.json, calls.jsonl, boot.json, guarded by flock on .lock."""

    def __init__(self, root):
        self.root = root
        self.devices_dir = os.path.join(root, 'devices')

    @contextlib.contextmanager
    def lock(self):
        os.makedirs(self.root, exist_ok=True)
        with open(os.path.join(self.root, '.lock'), 'a') as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def device_path(self, pci):
        return os.path.join(self.devices_dir, '%s.json' % pci)

    def devices(self):
        """All device records sorted by PCI address."""
        records = []
        if not os.path.isdir(self.devices_dir):
            return records
        for entry in sorted(os.listdir(self.devices_dir)):
            if entry.startswith('.') or not entry.endswith('.json'):
                continue
            with open(os.path.join(self.devices_dir, entry)) as handle:
                records.append(json.load(handle))
        return sorted(records, key=lambda rec: rec['pci'])

    def load(self, pci):
        with open(self.device_path(pci)) as handle:
            return json.load(handle)

    def save(self, record):
        atomic_write_json(self.device_path(record['pci']), record)

    def boot(self):
        path = os.path.join(self.root, 'boot.json')
        if not os.path.exists(path):
            return {'reboots': 0, 'power_cycles': 0}
        with open(path) as handle:
            return json.load(handle)

    def save_boot(self, data):
        atomic_write_json(os.path.join(self.root, 'boot.json'), data)

    def log_call(self, entry):
        with self.lock():
            with open(os.path.join(self.root, 'calls.jsonl'), 'a') as handle:
                handle.write(json.dumps(entry, sort_keys=True) + '\n')


def get_flag(record, name):
    flags = record.get('flags') or {}
    if name in flags:
        return flags[name]
    return record.get(name, FLAG_DEFAULTS[name])


def record_model(record):
    model = MODELS.get(record.get('model'))
    if model is None:
        raise ToolError('Unsupported device (unknown model %s)' % record.get('model'))
    return model


# --------------------------------------------------------------------------------------------
# Row model shared by query and set
# --------------------------------------------------------------------------------------------
class Item:
    """One table row: a scalar parameter, an array element, or a whole array."""

    def __init__(self, name, spec, index=None, whole_array=False):
        self.name = name
        self.spec = spec
        self.index = index
        self.whole_array = whole_array
        self.new = None

    @property
    def label(self):
        if self.index is not None:
            return '%s[%d]' % (self.name, self.index)
        return self.name

    def value(self, record, column):
        values = (record.get('params') or {}).get(self.name) or {}
        value = values.get(column)
        if self.index is not None:
            if not isinstance(value, list) or self.index >= len(value):
                return None
            return value[self.index]
        return value


def model_spec(name, model):
    """The spec of ``name`` on ``model``: read-only only where the model's real query says so."""
    spec = PARAM_DB[name]
    if spec['ro'] and name in model.get('not_ro', ()):
        spec = dict(spec, ro=False)
    return spec


def resolve_name(token, model, assignment=None):
    """Map NAME, NAME[i] or NAME[a..b] to Items; raise the tool's errors (assignment: the set argument, if any)."""
    match = NAME_RE.match(token)
    if not match:
        raise ToolError('Unknown Parameter: %s' % token)
    name, first, last = match.group(1), match.group(2), match.group(3)
    spec = PARAM_DB.get(name)
    if spec is None:
        raise ToolError('Unknown Parameter: %s' % name)
    if name not in model['params']:
        raise ToolError("The Device doesn't support %s parameter" % name)
    spec = model_spec(name, model)
    if first is None:
        if spec['size'] and assignment is not None:
            raise ToolError('Failed to parse %s: %s is an array parameter, an index must be given (%s[i]=VALUE)' % (assignment, name, name))
        return [Item(name, spec, whole_array=bool(spec['size']))]
    if not spec['size']:
        raise ToolError('Unknown Parameter: %s' % token)
    lo = int(first)
    hi = int(last) if last is not None else lo
    if hi < lo:
        raise ToolError('Unknown Parameter: %s' % token)
    for index in (lo, hi):
        if index >= spec['size']:
            raise ToolError('Index %d of the parameter %s is out of range. Maximal index is %d' % (index, name, spec['size'] - 1))
    return [Item(name, spec, index=i) for i in range(lo, hi + 1)]


# --------------------------------------------------------------------------------------------
# The emulated tool
# --------------------------------------------------------------------------------------------
class Tool:
    def __init__(self, flavor, state, stdin=None, stdout=None, stderr=None):
        self.flavor = FLAVORS[flavor]
        self.layout = LAYOUTS[os.environ.get('FWSIM_LAYOUT') or self.flavor['layout']]
        self.state = state
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.device_pci = None
        self.mutating = False
        self.opts = {}

    # ---- output helpers ----
    def out(self, text='', end='\n'):
        self.stdout.write(text + end)

    def error(self, message):
        """The real tools print '-E- ...' on stdout."""
        self.out('-E- %s' % message)
        self.stdout.flush()

    def ask(self, question):
        """askUser(): '\\n <question> (y/n) [n] : ' then 'y' with -y, else one stdin line."""
        self.out('\n %s (y/n) [n] : ' % question, end='')
        if self.opts['yes']:
            self.out('y')
            return True
        self.stdout.flush()
        answer = self.stdin.readline()
        if answer.strip().lower() in ('y', 'yes'):
            return True
        self.error('Aborted by user.')
        return False

    def reset_line(self, record):
        if get_flag(record, 'reset_level') == 'power_cycle':
            return '-I- Please power cycle machine to load new configurations.'
        return '-I- Please reboot machine to load new configurations.'

    # ---- table rendering ----
    def device_header(self, record, devname, index, trailing_blank=True):
        lw, vw = self.layout['dev_label_width'], self.layout['dev_value_width']
        lines = ['', 'Device #%d:' % index, '----------', '']
        for label, value in (('Device type:', record.get('device_type') or 'N/A'), ('Name:', record.get('name') or 'N/A'),
                             ('Description:', record.get('description') or 'N/A'), ('Device:', devname)):
            lines.append('%-*s%-*s' % (lw, label, vw, value))
        if trailing_blank:
            lines.append('')
        self.out('\n'.join(lines))

    def conf_header(self, columns):
        formats = self.layout['header_formats']
        # The set command's "Next Boot / New" header has a layout of its own (the real set transcripts).
        fmt = formats.get('set') if columns and columns[-1] == 'New' and len(columns) == 2 else None
        fmt = fmt or formats[len(columns)]
        self.out(fmt % tuple(['Configurations:'] + list(columns)))

    def format_row(self, mark, read_only, label, values):
        layout = self.layout
        prefix = layout['row_prefix'].format(mark='*' if mark else ' ', ro='RO' if read_only and layout['ro_marker'] else '  ')
        text = prefix + '%-*s' % (layout['name_width'], label)
        width = layout['value_width']
        previous = None
        for value in values:
            if previous is not None and (layout['separator'] == 'always' or len(previous) > width):
                text += ' '
            text += '%-*s' % (width, value)
            previous = value
        return text

    def cells(self, record, item, show_default, show_current):
        """Return (texts per shown column, modified flag, json dict) for default/current/next."""
        no_defaults = get_flag(record, 'no_defaults')
        no_current = get_flag(record, 'no_current')
        raw_current = bool(get_flag(record, 'raw_enum_current')) and item.spec['type'] == 'ENUM'
        default = None if no_defaults else item.value(record, 'default')
        current = None if no_current else item.value(record, 'current')
        nxt = item.value(record, 'next')
        modified = False
        if show_default and default is not None and nxt != default:
            modified = True
        if show_current and current is not None and nxt != current:
            modified = True
        if item.whole_array:
            label = array_label(item.spec)
            texts = {'default': label, 'current': label, 'next': label}
            jsons = dict(texts)
        else:
            texts = {'default': render_value(item.spec, default), 'current': render_value(item.spec, current, raw_current),
                     'next': render_value(item.spec, nxt)}
            jsons = {'default': json_value(item.spec, default), 'current': json_value(item.spec, current, raw_current),
                     'next': json_value(item.spec, nxt)}
        return texts, modified, jsons

    # ---- device selection ----
    def find_device(self, devname):
        records = self.state.devices()
        pci = normalize_pci(devname)
        for record in records:
            if pci is not None:
                if pci == record.get('pci') or pci in (record.get('functions') or []):
                    return record
                continue
            mst = record.get('mst')
            if not mst:
                continue
            if devname == mst:
                return record
            for number in range(1, len(record.get('functions') or [])):
                if devname == '%s.%d' % (mst, number):
                    return record
        return None

    def open_device(self, devname):
        record = self.find_device(devname)
        if record is None:
            raise ToolError('Failed to open the device')
        self.device_pci = record['pci']
        if get_flag(record, 'livefish'):
            raise ToolError('Device in Livefish mode is not supported')
        record_model(record)
        return record

    # ---- argument parsing ----
    def parse_args(self, argv):
        opts = {'dev': None, 'verbose': False, 'yes': False, 'force': False, 'json': None, 'cmd': None, 'args': []}
        self.opts = opts
        i = 0
        while i < len(argv):
            arg = argv[i]
            if arg in ('-v', '--version'):
                opts['cmd'] = 'version'
                return opts
            if arg in ('-h', '--help'):
                opts['cmd'] = 'help'
                return opts
            if arg in ('-d', '--dev', '-j', '--json', '--json_format', '-b', '--db'):
                if i + 1 >= len(argv):
                    raise ToolError({'-d': 'missing device name', '--dev': 'missing device name',
                                     '-b': 'missing database file name', '--db': 'missing database file name'}.get(arg, 'missing .json output file'))
                key = 'dev' if arg in ('-d', '--dev') else 'json' if arg.startswith(('-j', '--j')) else 'db'
                opts[key] = argv[i + 1]
                i += 2
                continue
            if arg in ('-e', '--enable_verbosity'):
                opts['verbose'] = True
            elif arg in ('-y', '--yes'):
                opts['yes'] = True
            elif arg == '--force':
                opts['force'] = True
            elif arg in ('q', 'query', 's', 'set', 'r', 'reset'):
                opts['cmd'] = {'q': 'query', 's': 'set', 'r': 'reset'}.get(arg, arg)
                opts['args'] = list(argv[i + 1:])
                break
            else:
                raise ToolError('Unknown command: %s' % arg)
            i += 1
        if opts['cmd'] is None:
            raise ToolError('No command found. For more information please read the help message:')
        if opts['cmd'] == 'set' and not opts['args']:
            raise ToolError('missing configuration arguments. For more information please run %s -h|--help.' % self.flavor['tool'])
        if opts['json'] is not None and opts['cmd'] != 'query':
            raise ToolError('Json format is only supported for query command.')
        if opts['dev'] is None:
            if opts['cmd'] in ('set', 'reset'):
                raise ToolError('%s command expects device to be specified.' % opts['cmd'])
            if not self.flavor['list_all_devices']:
                raise ToolError('No devices found.')
        return opts

    def usage(self):
        tool = self.flavor['tool']
        self.out('    NAME:\n        %s\n    SYNOPSIS:\n        %s [Options] <Commands> [Parameters]' % (tool, tool))
        self.out('    OPTIONS:')
        for flags, text in (('-d|--dev <device>', 'Perform operation for a specified MST device.'),
                            ('-e|--enable_verbosity', 'Show default and current configurations.'),
                            ('-j|--json_format <file>', 'Save the query output to file in JSON format, only usable with Query command'),
                            ('-y|--yes', 'Answer yes in prompt.'), ('-v|--version', 'Display version info.')):
            self.out('        %-24s : %s' % (flags, text))
        self.out('    COMMANDS SUMMARY')
        for flags, text in (('q|query', 'query supported configurations.'),
                            ('r|reset', 'reset all configurations to their default value.'),
                            ('s|set', 'set configurations to a specific device.')):
            self.out('        %-24s : %s' % (flags, text))

    # ---- commands ----
    def run(self, argv):
        try:
            opts = self.parse_args(argv)
        except ToolError as exc:
            self.error(str(exc))
            return EXIT_ERROR
        if opts['cmd'] == 'version':
            self.out(self.flavor['version'])
            return EXIT_OK
        if opts['cmd'] == 'help':
            self.usage()
            return EXIT_OK
        handler = {'query': self.cmd_query, 'set': self.cmd_set, 'reset': self.cmd_reset}[opts['cmd']]
        try:
            return handler()
        except ToolError as exc:
            self.error(str(exc))
            return EXIT_ERROR

    def cmd_query(self):
        opts = self.opts
        json_doc = {} if opts['json'] is not None else None
        if opts['dev'] is not None:
            targets = [(self.open_device(opts['dev']), opts['dev'])]
        else:
            targets = [(record, record.get('mst') or record['pci']) for record in self.state.devices()]
            if not targets:
                raise ToolError("No devices found, mst might be stopped. You may need to run 'mst start' to load MST modules. ")
        failed = False
        for index, (record, devname) in enumerate(targets, start=1):
            try:
                if opts['dev'] is None and get_flag(record, 'livefish'):
                    raise ToolError('Device in Livefish mode is not supported')
                self.query_one(record, devname, index, opts['args'], json_doc)
            except ToolError as exc:
                self.error(str(exc))
                failed = True
        if json_doc is not None:
            with open(opts['json'], 'w') as handle:
                handle.write(json.dumps(json_doc, indent='\t', sort_keys=True, separators=(',', ' : ')) + '\n')
            if failed:
                self.out('Query output saved to %s but one or more devices had an error.' % opts['json'])
            else:
                self.out('Query output saved to %s successfully' % opts['json'])
        return EXIT_ERROR if failed else EXIT_OK

    def support_notice(self, record):
        no_defaults, no_current = get_flag(record, 'no_defaults'), get_flag(record, 'no_current')
        if no_defaults and no_current:
            return 'Device Firmware does not support reading default and current configurations'
        if no_defaults:
            return 'Device Firmware does not support reading default configurations'
        if no_current:
            return 'Device Firmware does not support reading current configurations'
        return None

    def query_one(self, record, devname, index, names, json_doc):
        model = record_model(record)
        verbose = self.opts['verbose']
        no_defaults, no_current = get_flag(record, 'no_defaults'), get_flag(record, 'no_current')
        if verbose:
            # Firmware that cannot read a column does not print it; a note follows the table.
            columns = [c for c, drop in (('Default', no_defaults), ('Current', no_current), ('Next Boot', False)) if not drop]
        else:
            columns = ['Next Boot']
        notice = self.support_notice(record) if verbose else None
        dev_json = None
        if json_doc is not None:
            dev_json = {'device_type': record.get('device_type') or 'N/A', 'name': record.get('name') or 'N/A',
                        'description': record.get('description') or 'N/A', 'device': devname, 'tlv_configuration': {}}
            json_doc['Device #%d' % index] = dev_json
        else:
            self.device_header(record, devname, index)
            self.conf_header(columns)
        if get_flag(record, 'hang'):
            sys.stdout.flush()
            time.sleep(float(get_flag(record, 'hang')))
        if get_flag(record, 'fail_query'):
            self.error('Failed to query device %s configuration' % devname)
            raise ToolError(str(get_flag(record, 'fail_query')))
        items = []
        if names:
            for token in names:
                items.extend(resolve_name(token, model))
        else:
            for name in model['params']:
                spec = model_spec(name, model)
                items.append(Item(name, spec, whole_array=bool(spec['size'])))
        any_modified = any_ro = False
        for item in items:
            texts, modified, jsons = self.cells(record, item, show_default=True, show_current=verbose)
            if dev_json is not None:
                entry = {'read_only': item.spec['ro'], 'next_value': jsons['next']}
                if verbose:
                    entry.update({'modified': modified, 'default_value': jsons['default'], 'current_value': jsons['current']})
                dev_json['tlv_configuration'][item.label] = entry
                continue
            shown = [texts[key] for key, title in (('default', 'Default'), ('current', 'Current'), ('next', 'Next Boot'))
                     if title in columns]
            self.out(self.format_row(modified, item.spec['ro'], item.label, shown))
            any_modified = any_modified or modified
            any_ro = any_ro or item.spec['ro']
        if dev_json is None:
            if notice:
                self.out(notice)
            if any_modified:
                self.out("The '*' shows parameters with next value different from default/current value.")
            if any_ro and self.layout['ro_marker']:
                self.out("\nThe 'RO' shows parameters which are for read only and cannot be changed")

    def cmd_set(self):
        opts = self.opts
        assignments = []
        seen = set()
        for arg in opts['args']:
            parts = arg.split('=')
            if len(parts) != 2 or not parts[0] or not parts[1]:
                raise ToolError('Invalid Configuration argument %s' % arg)
            if parts[0] in seen:
                raise ToolError('Duplicate parameter, %s.' % parts[0])
            seen.add(parts[0])
            assignments.append((arg, parts[0], parts[1]))
        record = self.open_device(opts['dev'])
        model = record_model(record)
        verbose = opts['verbose']
        columns = ['Default', 'Current', 'Next Boot', 'New'] if verbose else ['Next Boot', 'New']
        self.device_header(record, opts['dev'], 1)
        notice = self.support_notice(record) if verbose else None
        if notice:
            self.out(notice)
        self.conf_header(columns)
        if get_flag(record, 'fail_query'):
            self.error('Failed to query device %s configuration' % opts['dev'])
            raise ToolError(str(get_flag(record, 'fail_query')))
        # Phase 1 (while building the table): names, indexes and value syntax.
        items = []
        for assignment, tag, text in assignments:
            for item in resolve_name(tag, model, assignment):
                item.new = parse_value(item.spec, text, assignment)
                items.append(item)
        any_modified = False
        for item in items:
            texts, modified, _jsons = self.cells(record, item, show_default=verbose, show_current=verbose)
            shown = [texts['default'], texts['current'], texts['next']] if verbose else [texts['next']]
            shown.append(render_value(item.spec, item.new))
            self.out(self.format_row(modified, item.spec['ro'], item.label, shown))
            any_modified = any_modified or modified
        if any_modified:
            self.out("The '*' shows parameters with next value different from default/current value.")
        if opts['force']:
            self.out('\n-W- Force flag specified, the validity of the Parameters will not be checked !')
            self.out('-W- Incorrect configuration might yield unexpected results. running in this mode is not recommended.', end='')
        if not self.ask('Apply new Configuration?'):
            return EXIT_ABORTED
        self.out('Applying... ', end='')
        # Phase 2 (firmware side): read-only, ranges, injected failure; all checked before any write.
        try:
            for item in items:
                if item.spec['ro']:
                    raise ToolError('Failed to set configuration: Operation is not supported (Read only TLV: %s)' % item.name)
                if not opts['force'] and item.spec['type'] == 'INT':
                    pmin, pmax = item.spec['min'], param_max(item.spec, model)
                    if not pmin <= item.new <= pmax:
                        raise ToolError('Failed to set configuration: The value of %s is out of range [%d..%d]' % (item.label, pmin, pmax))
            if get_flag(record, 'fail_set'):
                raise ToolError('Failed to set configuration: %s' % get_flag(record, 'fail_set'))
        except ToolError:
            self.out('Failed!')
            raise
        with self.state.lock():
            fresh = self.state.load(record['pci'])
            for item in items:
                values = fresh.setdefault('params', {}).setdefault(item.name, {})
                if item.index is not None:
                    array = list(values.get('next') or [])
                    array.extend([None] * (item.spec['size'] - len(array)))
                    array[item.index] = item.new
                    values['next'] = array
                else:
                    values['next'] = item.new
            self.state.save(fresh)
        self.mutating = True
        self.out('Done!')
        self.out(self.reset_line(record))
        return EXIT_OK

    def cmd_reset(self):
        opts = self.opts
        record = self.open_device(opts['dev'])
        model = record_model(record)
        self.device_header(record, opts['dev'], 1, trailing_blank=False)
        if not self.ask('Reset configuration for device %s?' % opts['dev']):
            return EXIT_ABORTED
        self.out('Applying... ', end='')
        if get_flag(record, 'fail_set'):
            self.out('Failed!')
            raise ToolError(str(get_flag(record, 'fail_set')))
        with self.state.lock():
            fresh = self.state.load(record['pci'])
            params = fresh.setdefault('params', {})
            for name in model['params']:
                if (PARAM_DB[name]['ro'] and name not in model.get('not_ro', ())) or name not in params:
                    continue
                default = params[name].get('default')
                params[name]['next'] = list(default) if isinstance(default, list) else default
            self.state.save(fresh)
        self.mutating = True
        self.out('Done!')
        self.out(self.reset_line(record))
        return EXIT_OK


# --------------------------------------------------------------------------------------------
# Admin interface
# --------------------------------------------------------------------------------------------
def parse_flag_value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text


def apply_flags(record, pairs):
    flags = record.setdefault('flags', dict(FLAG_DEFAULTS))
    for pair in pairs or []:
        key, sep, value = pair.partition('=')
        if not sep or key not in FLAG_DEFAULTS:
            raise AdminError('unknown flag %r (known: %s)' % (pair, ', '.join(sorted(FLAG_DEFAULTS))))
        value = parse_flag_value(value)
        if key in ('reset_level', 'image_activation') and value not in RESET_LEVELS:
            raise AdminError('%s must be one of %s' % (key, ', '.join(RESET_LEVELS)))
        flags[key] = value


def admin_assign(record, model, pairs, columns):
    """NAME=V / NAME[i]=V / NAME[a..b]=V into the given state columns; any integer is accepted for BOOL/ENUM."""
    for pair in pairs or []:
        tag, sep, text = pair.partition('=')
        if not sep:
            raise AdminError('expected NAME=VALUE, got %r' % pair)
        try:
            items = resolve_name(tag, model)
        except ToolError as exc:
            raise AdminError(str(exc))
        for item in items:
            try:
                value = parse_value(item.spec, text, pair)
            except ToolError as exc:
                value = parse_int(text)
                if value is None:
                    raise AdminError(str(exc))
            values = record['params'][item.name]
            for column in columns:
                if item.whole_array:
                    values[column] = [value] * item.spec['size']
                elif item.index is not None:
                    values[column][item.index] = value
                else:
                    values[column] = value


def new_record(state, model_name, pci_text, functions, mst):
    model = MODELS.get(model_name)
    if model is None:
        raise AdminError('unknown model %r (known: %s)' % (model_name, ', '.join(sorted(MODELS))))
    pci = normalize_pci(pci_text)
    if pci is None:
        raise AdminError('bad PCI address %r' % pci_text)
    base = int(pci[-1], 16)
    if functions < 1 or base + functions > 8:
        raise AdminError('--functions must keep function numbers within 0..7')
    function_list = ['%s.%x' % (pci[:-2], base + n) for n in range(functions)]
    if not mst:
        others = [rec for rec in state.devices() if rec.get('model') == model_name and rec['pci'] != pci]
        mst = '/dev/mst/mt%d_pciconf%d' % (model['device_id'], len(others))
    params = {}
    for name in model['params']:
        spec = PARAM_DB[name]
        default = model['defaults'].get(name, spec['default'])
        if spec['size']:
            params[name] = {column: [default] * spec['size'] for column in ('default', 'current', 'next')}
        else:
            params[name] = {'default': default, 'current': default, 'next': default}
    return {
        'model': model_name,
        'device_type': model['device_type'],
        'name': model['part_name'],
        'description': model['description'],
        'device_id': '0x%04x' % model['device_id'],
        'pci': pci,
        'functions': function_list,
        'mst': mst,
        'flags': dict(FLAG_DEFAULTS),
        'params': params,
    }


def models_table():
    table = {}
    for name, model in MODELS.items():
        table[name] = {
            'device_type': model['device_type'],
            'vendor_id': MELLANOX_VENDOR_ID,
            'device_id': '0x%04x' % model['device_id'],
            'vf_device_id': '0x%04x' % model['vf_device_id'],
            'part_name': model['part_name'],
            'description': model['description'],
            'max_vfs': model['max_vfs'],
            'max_pf': model['max_pf'],
            'ports': model['ports'],
            'vpi': model['vpi'],
            'mst_prefix': 'mt%d' % model['device_id'],
            'params': list(model['params']),
        }
    return table


def admin_parser():
    parser = argparse.ArgumentParser(prog='fwsim.py admin', description='Administer the fwsim state directory.')
    parser.add_argument('--state-dir', default=None, help='state directory (default: $FWSIM_STATE_DIR or %s)' % DEFAULT_STATE_DIR)
    sub = parser.add_subparsers(dest='action')
    sub.required = True
    init = sub.add_parser('init', help='create or overwrite a device record with the model defaults')
    init.add_argument('--model', required=True, choices=sorted(MODELS))
    init.add_argument('--pci', required=True)
    init.add_argument('--functions', type=int, default=1)
    init.add_argument('--mst', default=None)
    init.add_argument('--name', default=None, help='override the part name (Name: row)')
    init.add_argument('--description', default=None, help='override the Description: row')
    init.add_argument('--default', action='append', default=[], metavar='NAME=V', help='set default, current and next')
    init.add_argument('--set', action='append', default=[], metavar='NAME=V', help='set current and next (pre-existing configuration)')
    init.add_argument('--next', action='append', default=[], metavar='NAME=V', help='set next only (pending configuration)')
    init.add_argument('--flag', action='append', default=[], metavar='NAME=VALUE')
    sub.add_parser('reboot', help='warm reboot: current = next, except devices needing a power cycle')
    sub.add_parser('power-cycle', help='power cycle: current = next on every device')
    show = sub.add_parser('show', help='print the state as JSON')
    show.add_argument('--pci', default=None)
    sub.add_parser('models', help='print the model table as JSON')
    sub.add_parser('list', help='one line per device: <pci> <model> <device id> <mst>')
    flag = sub.add_parser('flag', help='change flags of an existing device')
    flag.add_argument('--pci', required=True)
    flag.add_argument('pairs', nargs='+', metavar='NAME=VALUE')
    return parser


def admin_main(argv, stdout=None):
    stdout = stdout or sys.stdout
    args = admin_parser().parse_args(argv)
    state = State(args.state_dir or os.environ.get('FWSIM_STATE_DIR') or DEFAULT_STATE_DIR)
    try:
        return _admin_dispatch(args, state, stdout)
    except AdminError as exc:
        sys.stderr.write('fwsim admin: error: %s\n' % exc)
        return 2


def _find_record(state, pci_text):
    pci = normalize_pci(pci_text)
    for record in state.devices():
        if pci is not None and (record['pci'] == pci or pci in (record.get('functions') or [])):
            return record
        if record.get('mst') and record.get('mst') == pci_text:
            return record
    raise AdminError('no device %r' % pci_text)


def _admin_dispatch(args, state, stdout):
    if args.action == 'models':
        stdout.write(json.dumps(models_table(), indent=2, sort_keys=True) + '\n')
        return 0
    if args.action == 'init':
        with state.lock():
            record = new_record(state, args.model, args.pci, args.functions, args.mst)
            if args.name is not None:
                record['name'] = args.name
            if args.description is not None:
                record['description'] = args.description
            model = MODELS[args.model]
            admin_assign(record, model, args.default, ('default', 'current', 'next'))
            admin_assign(record, model, args.set, ('current', 'next'))
            admin_assign(record, model, args.next, ('next',))
            apply_flags(record, args.flag)
            state.save(record)
        stdout.write('initialized %s %s %s %s\n' % (record['pci'], record['model'], record['device_id'], record['mst']))
        return 0
    if args.action == 'flag':
        with state.lock():
            record = _find_record(state, args.pci)
            apply_flags(record, args.pairs)
            state.save(record)
        stdout.write('%s flags: %s\n' % (record['pci'], json.dumps(record['flags'], sort_keys=True)))
        return 0
    if args.action in ('reboot', 'power-cycle'):
        applied, pending = [], []
        with state.lock():
            for record in state.devices():
                # A burnt firmware image (flintsim.py) runs from the next boot on (from the next power cycle only,
                # where its image_activation says so).
                image = record.get('image')
                cold_only = args.action == 'reboot' and get_flag(record, 'image_activation') == 'power_cycle'
                if image and image.get('running') != image.get('fw') and not cold_only:
                    record['image'] = dict(image, running=image.get('fw'))
                    state.save(record)
                if args.action == 'reboot' and get_flag(record, 'reset_level') == 'power_cycle':
                    pending.append(record['pci'])
                    continue
                for values in (record.get('params') or {}).values():
                    nxt = values.get('next')
                    values['current'] = list(nxt) if isinstance(nxt, list) else nxt
                state.save(record)
                applied.append(record['pci'])
            boot = state.boot()
            counter = 'reboots' if args.action == 'reboot' else 'power_cycles'
            boot[counter] = boot.get(counter, 0) + 1
            state.save_boot(boot)
        stdout.write('%s #%d: applied on %d device(s)%s; pending power cycle: %s\n' % (
            args.action, boot[counter], len(applied), (' (%s)' % ' '.join(applied)) if applied else '',
            ' '.join(pending) if pending else 'none'))
        return 0
    if args.action == 'show':
        if args.pci:
            data = _find_record(state, args.pci)
        else:
            data = {'devices': {record['pci']: record for record in state.devices()}, 'boot': state.boot()}
        stdout.write(json.dumps(data, indent=2, sort_keys=True) + '\n')
        return 0
    if args.action == 'list':
        for record in state.devices():
            stdout.write('%s %s %s %s\n' % (record['pci'], record.get('model'), record.get('device_id'), record.get('mst') or '-'))
        return 0
    raise AdminError('unknown action %s' % args.action)


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------
def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    flavor = os.environ.get('FWSIM_FLAVOR') or 'mft'
    if argv and argv[0].startswith('--flavor='):
        flavor = argv.pop(0).split('=', 1)[1]
    elif argv and argv[0] == '--flavor' and len(argv) > 1:
        flavor = argv[1]
        argv = argv[2:]
    if argv and argv[0] == 'admin':
        return admin_main(argv[1:])
    if flavor not in FLAVORS:
        sys.stderr.write('fwsim: unknown flavor %r (known: %s)\n' % (flavor, ', '.join(sorted(FLAVORS))))
        return 2
    state = State(os.environ.get('FWSIM_STATE_DIR') or DEFAULT_STATE_DIR)
    tool = Tool(flavor, state)
    rc = tool.run(argv)
    sys.stdout.flush()
    with contextlib.suppress(OSError):
        state.log_call({'argv': argv, 'flavor': flavor, 'mutating': tool.mutating, 'rc': rc, 'device': tool.device_pci})
    return rc


if __name__ == '__main__':
    sys.exit(main())
