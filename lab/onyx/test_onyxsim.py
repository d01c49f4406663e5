# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce.fabric contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Self-tests of lab/onyx/onyxsim.py, the Onyx switch simulator, over real SSH.

The simulator runs as a subprocess on 127.0.0.1 with a free port; netmiko's ``mellanox_mlnxos``
driver (what the collection uses) and raw paramiko drive it.  Expected texts follow the published
Onyx output (the Onyx User Manual 3.10 and public captures of Onyx 3.10 switches), not the simulator.
Run: python3 -m pytest -q -p no:cacheprovider lab/onyx/test_onyxsim.py
"""

import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

paramiko = pytest.importorskip('paramiko')
netmiko = pytest.importorskip('netmiko')

ONYXSIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'onyxsim.py')

SEED = [
    'roce',
    'vlan 111',
    'interface ethernet 1/1-1/4 switchport mode access',
    'interface ethernet 1/1-1/4 switchport access vlan 111',
    'interface ethernet 1/1-1/4 mtu 9216 force',
    'interface ethernet 1/1-1/3 traffic-class 3 congestion-control ecn minimum-absolute 150 maximum-absolute 1500',
    'dcb priority-flow-control enable force',
    'dcb priority-flow-control priority 3 enable',
    'interface ethernet 1/1-1/4 qos trust L3',
]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'common'))
import corpus  # noqa: E402  pylint: disable=wrong-import-position


def corpus_body(name):
    return corpus.body('onyx', name)


def roce_fields(text):
    """What 'show roce' says, read as the collection reads it: label -> value, spacing ignored."""
    fields = {}
    for line in text.splitlines():
        if ':' in line:
            label, value = line.split(':', 1)
            label = re.sub(r'\s*\(KB\)$', '', label.strip())
            if label in ('RoCE mode', 'Port trust mode', 'PFC', 'Min', 'Max', 'Mode', 'switch-priority 3', 'Selector', 'Protocol'):
                fields[label] = value.strip()
    return fields


PROMPT_END = re.compile(r'(?:^|\n)[^\n]*(?: >| #) $')


class Sim:
    """One onyxsim.py process."""

    def __init__(self, state_file, *extra):
        self.state_file = str(state_file)
        cmd = [sys.executable, ONYXSIM, '--listen', '127.0.0.1', '--port', '0', '--username', 'admin',
               '--state-file', self.state_file, '--hostname', 'sw'] + [str(x) for x in extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _w, _x = select.select([self.proc.stdout], [], [], 20)
        line = self.proc.stdout.readline() if ready else ''
        if not line.startswith('READY '):
            self.proc.kill()
            raise AssertionError('simulator did not start: %r %s' % (line, self.proc.stderr.read()))
        self.port = int(line.split()[1])

    def state(self):
        with open(self.state_file, encoding='utf-8') as handle:
            return json.load(handle)

    def set_faults(self, **faults):
        doc = self.state()
        doc['faults'].update(faults)
        tmp = self.state_file + '.tmp'
        with open(tmp, 'w', encoding='utf-8') as handle:
            json.dump(doc, handle)
        os.replace(tmp, self.state_file)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def netmiko(self, **kwargs):
        params = dict(device_type='mellanox_mlnxos', host='127.0.0.1', port=self.port, username='admin', password='admin')
        params.update(kwargs)
        return netmiko.ConnectHandler(**params)

    def cli(self, **kwargs):
        return RawCli(self.port, **kwargs)


class RawCli:
    """A plain paramiko shell: what a terminal user sees, byte for byte."""

    def __init__(self, port, height=1000, password='admin', pkey=None):
        self.client = paramiko.SSHClient()
        self.client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        self.client.connect('127.0.0.1', port=port, username='admin', password=None if pkey else password, pkey=pkey,
                            look_for_keys=False, allow_agent=False, timeout=10)
        self.chan = self.client.invoke_shell(width=200, height=height)
        self.banner = self.read_until(PROMPT_END)

    def read_until(self, pattern, timeout=10):
        buf = ''
        end = time.time() + timeout
        while time.time() < end:
            if self.chan.recv_ready():
                data = self.chan.recv(65536)
                if not data:
                    break
                buf += data.decode('utf-8')
                if re.search(pattern, buf):
                    return buf
            elif self.chan.closed or self.chan.exit_status_ready() or not self.chan.get_transport().is_active():
                raise EOFError(buf)
            else:
                time.sleep(0.01)
        raise AssertionError('timeout waiting for %r in %r' % (pattern, buf))

    def send(self, text):
        self.chan.send(text.encode('utf-8'))

    def cmd(self, line):
        """Run one line; return its output without the echo and the next prompt (\\n line ends)."""
        self.send(line + '\n')
        raw = self.read_until(PROMPT_END).replace('\r\n', '\n')
        body = raw.split('\n', 1)[1] if '\n' in raw else ''
        return body[:body.rfind('\n') + 1].rstrip('\n') if '\n' in body else ''

    def close(self):
        self.client.close()


@pytest.fixture(scope='module')
def sim(tmp_path_factory):
    s = Sim(tmp_path_factory.mktemp('onyx') / 'state.json', '--version', '3.10.4006', '--ports', '32')
    yield s
    assert s.stop() == 0


@pytest.fixture(scope='module')
def conn(sim):
    c = sim.netmiko()
    yield c
    c.disconnect()


def test_netmiko_finds_prompts_and_modes(sim, conn):
    assert conn.find_prompt() == 'sw >'
    conn.enable()
    assert conn.find_prompt() == 'sw #'
    conn.config_mode()
    assert conn.find_prompt() == 'sw (config) #'
    conn.exit_config_mode()
    assert conn.find_prompt() == 'sw #'
    st = sim.state()
    assert st['logins'] == 1 and st['sessions'] == 1
    assert st['version'] == '3.10.4006' and st['hostname'] == 'sw' and len(st['ports']) == 32
    first = st['commands'][0]
    assert first == {'session': 1, 'line': 'no cli session paging enable', 'mode': 'user', 'ok': True}
    assert {'session': 1, 'line': 'config term', 'mode': 'enable', 'ok': True} in st['commands']


def test_seed_setup_lands_in_state_and_show_output(sim, conn):
    conn.send_config_set(SEED, error_pattern=r'%')
    st = sim.state()
    run = st['running']
    assert run['roce'] == 'lossless'
    assert run['vlans']['111'] == {'name': ''}
    assert run['pfc'] == {'enabled': True, 'priorities': [3]}
    for p in ('1/1', '1/2', '1/3', '1/4'):
        port = run['ports'][p]
        assert (port['switchport_mode'], port['access_vlan'], port['mtu'], port['trust']) == ('access', 111, 9216, 'L3')
        assert port['ecn'] == ({} if p == '1/4' else {'3': {'mode': 'ecn', 'threshold': 'absolute', 'min': 150, 'max': 1500}})
    assert run['ports']['1/5']['mtu'] == 1500 and run['ports']['1/5']['trust'] is None
    # RoCE effects: trust L3 and ECN on TC 3 everywhere, PFC oper on; RoCE and MTU changes toggled links.
    eff = st['effective']['ports']
    assert eff['1/5']['trust'] == 'L3' and eff['1/5']['ecn']['3']['min'] == 150 and eff['1/5']['pfc_oper'] == 'Enabled'
    assert st['link_toggles']['1/1'] == 2 and st['link_toggles']['1/5'] == 1
    assert st['saved']['roce'] is None and '111' not in st['saved']['vlans']
    assert all(c['ok'] for c in st['commands'] if c['line'] in SEED)

    text = conn.send_command('show running-config')
    for line in ('## Hostname: sw', '## Product release: 3.10.4006', '## Interface Ethernet configuration',
                 'no cli default prefix-modes enable'):
        assert line in text.splitlines()
    body = [line for line in text.splitlines() if line.startswith('   ')]
    assert body == [
        '   interface ethernet 1/1-1/4 mtu 9216 force',
        '   vlan 111',
        '   interface ethernet 1/1-1/4 switchport access vlan 111',
        '   dcb priority-flow-control enable force',
        '   dcb priority-flow-control priority 3 enable',
        '   interface ethernet 1/1-1/4 qos trust L3',
        '   interface ethernet 1/1-1/3 traffic-class 3 congestion-control ecn minimum-absolute 150 maximum-absolute 1500',
        '   roce',
        '   hostname sw',
    ]
    assert conn.send_command('show running-config interface ethernet 1/4').splitlines() == [
        'interface ethernet 1/4 mtu 9216 force',
        'interface ethernet 1/4 switchport access vlan 111',
        'interface ethernet 1/4 qos trust L3',
    ]
    shown = conn.send_command('show roce')
    assert roce_fields(shown) == roce_fields(corpus_body('show_roce_lossless_doc_3.10.4100.txt')), \
        'the simulator reads differently from the vendor example of show roce in lossless mode'
    assert conn.send_command('show hosts | include Hostname').strip() == 'Hostname: sw'
    roce = shown.splitlines()
    assert roce[:3] == ['RoCE mode      : lossless', 'LLDP           : enabled', 'Port trust mode: L3']
    assert 'PFC              : enabled' in roce and '  Min (KB): 150' in roce and '  Max (KB): 1500' in roce
    pfc = conn.send_command('show dcb priority-flow-control').splitlines()
    assert pfc[:3] == ['PFC: enabled', 'Priority Enabled List: 3', 'Priority Disabled List: 0 1 2 4 5 6 7']
    assert 'Eth1/1           Auto             Enabled' in pfc
    assert conn.send_command('show interfaces ethernet 1/1 | include Flow-control').strip() == \
        'Flow-control                     : receive off send off'
    mtu_line = conn.send_command('show interfaces ethernet 1/2 | include MTU').strip()
    assert mtu_line == 'MTU                              : 9216 bytes (Maximum packet size 9238 bytes)'

    # JSON, layout of >= 3.6.6000 (3.10 > 3.6 numerically; as strings it would be the old layout).
    ifs = json.loads(conn.send_command('show interfaces ethernet 1/1 | json-print'))
    attrs = ifs[0]['Eth1/1'][0]
    assert attrs['MTU'].split()[0] == '9216' and attrs['Admin state'] == 'Enabled' and 'header' not in attrs
    sw = json.loads(conn.send_command('show interfaces switchport | json-print'))
    assert sw['Eth1/1'] == [{'Access vlan': '111', 'Allowed vlans': '', 'Mode': 'access'}]
    vlans = json.loads(conn.send_command('show vlan | json-print'))
    assert vlans['111'] == [{'Name': '', 'Ports': 'Eth1/1, Eth1/2, Eth1/3, Eth1/4'}]
    assert vlans['1'][0]['Name'] == 'default' and 'Eth1/1,' not in vlans['1'][0]['Ports']
    pfcj = json.loads(conn.send_command('show dcb priority-flow-control | json-print'))
    assert pfcj[0]['PFC'] == 'enabled' and pfcj[1]['Priority Enabled List'] == '3'
    assert pfcj[2]['Eth1/1'] == [{'PFC admin': 'Auto', 'PFC oper': 'Enabled'}]
    cc = json.loads(conn.send_command('show interfaces ethernet 1/1 congestion-control | json-print'))
    assert cc[0]['Interface ethernet'] == '1/1' and cc[1] == {'header': 'TC-0', 'Mode': 'none'}
    assert cc[3 + 1] == {'Threshold mode': 'absolute', 'RED dropped packets': '0', 'header': 'TC-3', 'Mode': 'ECN',
                         'Maximum threshold': '1500 KB', 'Minimum threshold': '150 KB'}
    qos = json.loads(conn.send_command('show qos interface ethernet 1/1 | json-print'))
    assert qos[0]['Eth1/1'][0]['Trust mode'] == 'L3' and qos[0]['Eth1/1'][0]['DSCP rewrite'] == 'disabled'
    ets = json.loads(conn.send_command('show dcb ets interface ethernet 1/1 | json-print'))
    assert ets[0]['Eth1/1'][2]['ETS per TC'][0]['3'][0]['S.Mode'] == 'WRR'
    assert ets[0]['Eth1/1'][2]['ETS per TC'][0]['6'][0]['S.Mode'] == 'Strict'
    version = json.loads(conn.send_command('show version | json-print'))
    assert version['Product name'] == 'Onyx' and version['Product release'] == '3.10.4006'
    assert version['Version summary'].startswith('X86_64 3.10.4006 ')

    # Same config again: nothing changes, no link toggles.
    conn.send_config_set(SEED, error_pattern=r'%')
    again = sim.state()
    assert again['running'] == run and again['link_toggles'] == st['link_toggles']


def test_no_forms_sub_modes_and_trunks(sim, conn):
    conn.send_config_set([
        'vlan 222',
        'exit',
        'vlan 222 name "storage net"',
        'vlan 223',
        'name backup',
        'exit',
        'interface ethernet 1/5-1/6 switchport mode trunk',
        'interface ethernet 1/5-1/6 switchport trunk allowed-vlan none',
        'interface ethernet 1/5-1/6 switchport trunk allowed-vlan add 111',
        'interface ethernet 1/5 switchport trunk allowed-vlan add 222',
        'interface ethernet 1/7',
        'shutdown',
        'description to node7',
        'dcb priority-flow-control mode on force',
        'exit',
        'interface ethernet 1/8 traffic-class 3 congestion-control red minimum-relative 10 maximum-relative 80',
        'interface vlan 111',
        'ip address 10.11.1.1/24',
        'exit',
    ], error_pattern=r'%')
    run = sim.state()['running']
    assert run['vlans']['222'] == {'name': 'storage net'} and run['vlans']['223'] == {'name': 'backup'}
    assert run['ports']['1/5']['allowed_vlans'] == [111, 222] and run['ports']['1/6']['allowed_vlans'] == [111]
    p7 = run['ports']['1/7']
    assert (p7['shutdown'], p7['description'], p7['pfc_mode']) == (True, 'to node7', 'on')
    assert run['ports']['1/8']['ecn']['3'] == {'mode': 'red', 'threshold': 'relative', 'min': 10, 'max': 80}
    assert run['interface_vlans']['111'] == {'ip_address': '10.11.1.1/24', 'mtu': 1500}
    text = conn.send_command('show running-config').splitlines()
    for line in ('   vlan 222-223', '   vlan 222 name "storage net"', '   interface ethernet 1/5-1/6 switchport mode trunk',
                 '   interface ethernet 1/5-1/6 switchport trunk allowed-vlan none',
                 '   interface ethernet 1/5-1/6 switchport trunk allowed-vlan add 111',
                 '   interface ethernet 1/5 switchport trunk allowed-vlan add 222', '   interface ethernet 1/7 shutdown',
                 '   interface ethernet 1/7 description "to node7"', '   interface ethernet 1/7 dcb priority-flow-control mode on force',
                 '   interface vlan 111 ip address 10.11.1.1/24 primary'):
        assert line in text
    sp = json.loads(conn.send_command('show interfaces switchport | json-print'))
    assert sp['Eth1/5'] == [{'Access vlan': 'N/A', 'Allowed vlans': '111, 222', 'Mode': 'trunk'}]
    cc = json.loads(conn.send_command('show interfaces ethernet 1/8 congestion-control | json-print'))
    assert cc[4]['Mode'] == 'RED' and cc[4]['Minimum threshold'] == '10%' and cc[4]['Threshold mode'] == 'relative'

    conn.send_config_set([
        'interface ethernet 1/7',
        'no shutdown',
        'no description',
        'no dcb priority-flow-control mode force',
        'exit',
        'no interface ethernet 1/8 traffic-class 3 congestion-control',
        'interface ethernet 1/5-1/6 switchport trunk allowed-vlan remove 111',
        'interface ethernet 1/5-1/6 switchport mode access',
        'vlan 223 no name',
        'no vlan 222',
        'no interface vlan 111',
        'interface ethernet 1/3 no switchport access vlan',
        'interface ethernet 1/1-1/4 no qos trust',
        'interface ethernet 1/4 no mtu force',
        'no dcb priority-flow-control priority 3 enable',
        'no dcb priority-flow-control enable force',
        'no roce',
    ], error_pattern=r'%')
    st = sim.state()
    run = st['running']
    assert run['roce'] is None and run['pfc'] == {'enabled': False, 'priorities': []}
    assert '222' not in run['vlans'] and run['vlans']['223'] == {'name': ''} and run['interface_vlans'] == {}
    assert run['ports']['1/5']['switchport_mode'] == 'access' and run['ports']['1/5']['access_vlan'] == 1
    p7 = run['ports']['1/7']
    assert (p7['shutdown'], p7['description'], p7['pfc_mode']) == (False, '', None)
    assert run['ports']['1/8']['ecn'] == {} and run['ports']['1/3']['access_vlan'] == 1
    assert run['ports']['1/4']['mtu'] == 1500 and all(run['ports']['1/%d' % i]['trust'] is None for i in range(1, 5))
    assert st['effective']['ports']['1/5']['trust'] == 'L2' and st['effective']['ports']['1/5']['ecn'] == {}
    assert st['link_toggles']['1/4'] == 4 and st['link_toggles']['1/1'] == 3
    assert conn.send_command('show roce').splitlines()[0] == 'RoCE mode      : N/A'
    text = conn.send_command('show running-config')
    assert 'roce' not in text and 'qos trust' not in text and 'dcb priority-flow-control' not in text
    assert conn.send_command('show dcb priority-flow-control').splitlines()[0] == 'PFC: disabled'


def test_errors_are_onyx_percent_errors_and_change_nothing(sim, conn):
    before = sim.state()['running']
    with pytest.raises(netmiko.ConfigInvalidException):
        conn.send_config_set(['xyz'], error_pattern=r'%')
    conn.exit_config_mode()
    out = conn.send_config_set([
        'xyz',
        'interface ethernet 1/1 foo',
        'interface ethernet 1/99 mtu 9216 force',
        'interface ethernet 1/1 mtu 100 force',
        'interface ethernet 1/4-1/1 shutdown',
        'vlan 5000',
        'interface ethernet 1/2 switchport access vlan 999',
        'interface ethernet 1/1 traffic-class 3 congestion-control ecn minimum-absolute 900 maximum-absolute 100',
        'interface ethernet',
        'roce turbo',
        'interface ethernet 1/1 switchport trunk allowed-vlan add 1',
    ])
    for text in ('% Unrecognized command "xyz".\nType "?" for help.',
                 '% Unrecognized command "foo".\nType "interface ethernet 1/1 ?" for help.',
                 '% Interface ethernet 1/99 does not exist',
                 '% Invalid MTU 100. Valid range is 1500-9216.',
                 '% Invalid interface range 1/4-1/1',
                 '% Invalid VLAN ID 5000. Valid range is 1-4094.',
                 '% VLAN 999 does not exist',
                 '% Minimum threshold 900 is greater than maximum threshold 100',
                 '% Incomplete command.\nType "interface ethernet ?" for help.',
                 '% Unrecognized command "turbo".\nType "roce ?" for help.',
                 '% Interface ethernet 1/1 is not in trunk mode'):
        assert text in out
    st = sim.state()
    assert st['running'] == before
    assert [c['ok'] for c in st['commands'] if c['line'] == 'xyz'] == [False, False]
    # netmiko stops at the first error: what came before is applied, what came after is not.
    with pytest.raises(netmiko.ConfigInvalidException):
        conn.send_config_set(['vlan 300', 'bogus', 'vlan 301'], error_pattern=r'%')
    conn.exit_config_mode()
    vlans = sim.state()['running']['vlans']
    assert '300' in vlans and '301' not in vlans
    # show commands are available in user mode, configuration commands are not
    cli = sim.cli()
    assert cli.cmd('configure terminal') == '% Unrecognized command "configure".\nType "?" for help.'
    assert 'Product release:   3.10.4006' in cli.cmd('sh ver')
    assert cli.cmd('show running-config') == '% Unrecognized command "running-config".\nType "show ?" for help.'
    cli.close()


def test_save_config_copies_running_to_saved(sim, conn):
    st = sim.state()
    assert st['saved'] != st['running']
    conn.save_config()
    st = sim.state()
    assert st['saved'] == st['running']
    assert {'session': 1, 'line': 'configuration write', 'mode': 'config', 'ok': True} in st['commands']


def test_breakout_split_and_unsplit(sim, conn):
    conn.send_config_set([
        'interface ethernet 1/10 module-type qsfp-split-4 force',
        'interface ethernet 1/10/2 mtu 9216 force',
        'interface ethernet 1/10/1-1/10/4 switchport access vlan 300',
    ], error_pattern=r'%')
    st = sim.state()
    assert st['running']['breakout'] == {'1/10': 'qsfp-split-4'}
    assert '1/10' not in st['ports'] and ['1/10/1', '1/10/2', '1/10/3', '1/10/4'] == [p for p in st['ports'] if p.startswith('1/10/')]
    assert st['running']['ports']['1/10/2']['mtu'] == 9216 and st['running']['ports']['1/10/4']['access_vlan'] == 300
    text = conn.send_command('show running-config').splitlines()
    assert '   interface ethernet 1/10 module-type qsfp-split-4 force' in text
    assert '   interface ethernet 1/10/2 mtu 9216 force' in text
    assert '   interface ethernet 1/10/1-1/10/4 switchport access vlan 300' in text
    attrs = json.loads(conn.send_command('show interfaces ethernet 1/10/2 | json-print'))[0]['Eth1/10/2'][0]
    assert attrs['Actual speed'] == '25 Gbps'
    out = conn.send_config_set(['interface ethernet 1/10 mtu 9216 force'])
    assert '% Interface ethernet 1/10 does not exist' in out
    out = conn.send_config_set(['interface ethernet 1/10/1 no module-type'])
    assert 'use "force"' in out
    conn.send_config_set(['interface ethernet 1/10/1 no module-type force'], error_pattern=r'%')
    st = sim.state()
    assert st['running']['breakout'] == {} and '1/10' in st['ports'] and not [p for p in st['ports'] if p.startswith('1/10/')]


def test_echo_line_editing_crlf_and_pager(sim):
    cli = sim.cli(height=10)
    assert cli.banner.endswith('sw > ')
    assert cli.cmd('no cli session paging enable') == ''
    cli.send('shw\x7f\x7fhow version\r')
    out = cli.read_until(PROMPT_END)
    assert out.startswith('shw\b \b\b \bhow version\r\n') and 'Product release:   3.10.4006' in out
    for ending in ('\r', '\n', '\r\n'):
        cli.send('enable' + ending)
        assert cli.read_until(PROMPT_END) == 'enable\r\nsw # '
    cli.send('\r\n')
    assert cli.read_until(PROMPT_END) == '\r\nsw # '
    time.sleep(0.2)
    assert not cli.chan.recv_ready(), 'CRLF must not produce a second prompt'
    # paging (on at login) shows a screen (height - 1 lines), then "lines 1-9 "
    assert cli.cmd('cli session paging enable') == ''
    cli.send('show running-config\n')
    first = cli.read_until(r'lines 1-9 $')
    assert first.count('\r\n') == 10
    cli.send(' ')
    assert cli.read_until(r'lines 10-18 $')
    cli.send('q')
    assert cli.read_until(PROMPT_END).endswith('sw # ')
    assert cli.cmd('no cli session paging enable') == ''
    assert cli.cmd('show running-config').endswith('cli default prefix-modes enable')
    cli.close()


def test_pfc_global_enable_asks_for_confirmation_without_force(sim):
    cli = sim.cli()
    cli.cmd('enable')
    cli.cmd('configure terminal')
    cli.send('dcb priority-flow-control enable\n')
    assert cli.read_until(r"Type 'yes' to confirm enable pfc globally: $")
    cli.send('no\n')
    cli.read_until(PROMPT_END)
    assert sim.state()['running']['pfc']['enabled'] is False
    cli.send('dcb priority-flow-control enable\n')
    cli.read_until(r"globally: $")
    cli.send('yes\n')
    assert cli.read_until(PROMPT_END).endswith('sw (config) # ')
    assert sim.state()['running']['pfc']['enabled'] is True
    assert cli.cmd('no dcb priority-flow-control enable force') == ''
    assert sim.state()['running']['pfc']['enabled'] is False
    cli.close()


def test_concurrent_sessions_share_one_running_config(sim):
    clis = [sim.cli(), sim.cli()]
    errors = []

    def work(cli, base):
        try:
            cli.cmd('enable')
            cli.cmd('configure terminal')
            for v in range(base, base + 15):
                assert cli.cmd('vlan %d' % v) == ''
                assert cli.cmd('exit') == ''
        except AssertionError as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(cli, base)) for cli, base in zip(clis, (400, 420))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    vlans = sim.state()['running']['vlans']
    assert all(str(v) in vlans for v in list(range(400, 415)) + list(range(420, 435)))
    shown = json.loads(clis[0].cmd('show vlan | json-print'))
    assert '434' in shown and '414' in shown
    for cli in clis:
        cli.close()


def test_wrong_password_is_an_ssh_auth_failure(sim):
    logins = sim.state()['logins']
    with pytest.raises(netmiko.NetmikoAuthenticationException):
        sim.netmiko(password='wrong', conn_timeout=5)
    with pytest.raises(paramiko.AuthenticationException):
        RawCli(sim.port, password='wrong')
    assert sim.state()['logins'] == logins


def test_runtime_faults_reject_delay_and_drop(sim, conn):
    sim.set_faults(reject=r'^vlan 77\b')
    assert '% Internal error, please try again' in conn.send_config_set(['vlan 77'])
    with pytest.raises(netmiko.ConfigInvalidException):
        conn.send_config_set(['vlan 78', 'vlan 77', 'vlan 79'], error_pattern=r'%')
    conn.exit_config_mode()
    st = sim.state()
    assert '77' not in st['running']['vlans'] and '78' in st['running']['vlans'] and '79' not in st['running']['vlans']
    assert {'session': 1, 'line': 'vlan 77', 'mode': 'config', 'ok': False} in st['commands']
    sim.set_faults(reject=None, delay=0.4)
    t0 = time.time()
    conn.send_command('show version')
    assert time.time() - t0 >= 0.4
    sim.set_faults(delay=0)
    t0 = time.time()
    conn.send_command('show version')
    assert time.time() - t0 < 0.4
    # drop after the 2nd configuration line of any session from now on: applied, then no reply
    sim.set_faults(drop_after=2)
    cli = sim.cli()
    cli.cmd('enable')
    cli.cmd('configure terminal')
    assert cli.cmd('vlan 601') == ''
    cli.send('vlan 602\n')
    with pytest.raises(EOFError):
        cli.read_until(PROMPT_END, timeout=5)
    st = sim.state()
    assert '602' in st['running']['vlans'] and st['drops'] == 1 and st['faults']['drop_after'] is None


def test_running_config_replays_to_the_same_state(sim, tmp_path):
    """What show running-config prints is valid input: replayed on a factory switch it rebuilds the same config."""
    src = sim.cli()
    src.cmd('enable')
    src.cmd('configure terminal')
    for line in ('interface ethernet 1/12 module-type qsfp-split-2 force', 'interface ethernet 1/12/2 speed 25G force',
                 'vlan 700-702', 'vlan 701 name "gpu fabric"', 'interface ethernet 1/13-1/14 switchport mode hybrid',
                 'interface ethernet 1/13-1/14 switchport access vlan 700', 'interface ethernet 1/13 switchport hybrid allowed-vlan 701-702',
                 'interface ethernet 1/15 traffic-class 6 dcb ets strict', 'interface ethernet 1/15 traffic-class 3 dcb ets wrr 40',
                 'interface ethernet 1/16 flowcontrol send on force', 'interface ethernet 1/16 qos rewrite dscp', 'roce semi-lossless',
                 'interface vlan 700', 'ip address 10.70.0.1 255.255.255.0', 'mtu 9000', 'exit', 'hostname sw'):
        assert src.cmd(line) == '', line
    text = src.cmd('show running-config')
    src.close()
    dst = Sim(tmp_path / 'replay.json', '--ports', '32')
    try:
        cli = dst.cli()
        cli.cmd('no cli session paging enable')
        cli.cmd('enable')
        cli.cmd('configure terminal')
        for line in text.splitlines():
            if line.strip():
                assert cli.cmd(line) == '', line
        cli.close()
        want, got = sim.state()['running'], dst.state()['running']
        assert [(p, got['ports'].get(p), want['ports'][p]) for p in want['ports'] if got['ports'].get(p) != want['ports'][p]] == []
        assert got == want
        assert got['interface_vlans']['700'] == {'ip_address': '10.70.0.1/24', 'mtu': 9000}
        assert got['ports']['1/13']['allowed_vlans'] == [701, 702] and got['breakout'] == {'1/12': 'qsfp-split-2'}
    finally:
        assert dst.stop() == 0


def test_json_layouts_and_mtu_rules_by_version(sim, tmp_path):
    old = Sim(tmp_path / 'old.json', '--version', '3.6.5000', '--ports', '8')
    try:
        new_cli, old_cli = sim.cli(), old.cli()
        toggles = sim.state()['link_toggles']['1/20']
        for c in (new_cli, old_cli):
            c.cmd('enable')
        # older than 3.6.6000: list with "header" / plain dicts / "Table 2"
        ifs = json.loads(old_cli.cmd('show interfaces ethernet 1/1 | json-print'))
        assert ifs[0]['header'] == 'Eth1/1' and ifs[0]['MTU'] == '1500 bytes(Maximum packet size 1522 bytes)'
        assert json.loads(old_cli.cmd('show interfaces switchport | json-print'))['Eth1/1'] == \
            {'Access vlan': '1', 'Allowed vlans': '', 'Mode': 'access'}
        assert json.loads(old_cli.cmd('show vlan | json-print'))['1']['Name'] == 'default'
        pfc = json.loads(old_cli.cmd('show dcb priority-flow-control | json-print'))
        assert pfc['Table 2']['Eth1/1'] == [{'PFC admin': 'Auto', 'PFC oper': 'Disabled'}]
        assert json.loads(old_cli.cmd('show version | json-print'))['Product release'] == '3.6.5000'
        # 3.6.6000 and later (3.10 here): one-element lists, no header
        new_ifs = json.loads(new_cli.cmd('show interfaces ethernet 1/1 | json-print'))
        assert list(new_ifs[0]) == ['Eth1/1'] and 'header' not in new_ifs[0]['Eth1/1'][0]
        assert isinstance(json.loads(new_cli.cmd('show vlan | json-print'))['1'], list)
        assert isinstance(json.loads(new_cli.cmd('show dcb priority-flow-control | json-print')), list)
        # MTU on an enabled port: before 3.10 it needs "force" or a shut port; 3.10 takes it as is
        old_cli.cmd('configure terminal')
        new_cli.cmd('configure terminal')
        assert old_cli.cmd('interface ethernet 1/1 mtu 9216') == \
            '% Interface ethernet 1/1 is enabled: shut it down before changing the MTU, or use "force"'
        assert old_cli.cmd('interface ethernet 1/1 shutdown') == ''
        assert old_cli.cmd('interface ethernet 1/1 mtu 9216') == ''
        assert old_cli.cmd('interface ethernet 1/2 mtu 9216 force') == ''
        assert new_cli.cmd('interface ethernet 1/20 mtu 9000') == ''
        ost = old.state()
        assert ost['running']['ports']['1/1']['mtu'] == 9216 and ost['link_toggles']['1/1'] == 0
        assert ost['link_toggles']['1/2'] == 1 and sim.state()['link_toggles']['1/20'] == toggles + 1
        old_cli.close()
        new_cli.close()
    finally:
        assert old.stop() == 0


def test_drop_after_flag_closes_connection_mid_change_and_rerun_converges(tmp_path):
    s = Sim(tmp_path / 'drop.json', '--fault-drop-after', '3', '--ports', '8')
    try:
        lines = ['vlan 501', 'vlan 502', 'vlan 503', 'vlan 504']
        c = s.netmiko()
        c.enable()
        with pytest.raises((netmiko.ReadTimeout, OSError, EOFError)):
            c.send_config_set(lines, read_timeout=1.5)
        st = s.state()
        assert sorted(st['running']['vlans']) == ['1', '501', '502', '503'] and st['drops'] == 1
        c = s.netmiko()
        c.enable()
        c.send_config_set(lines, error_pattern=r'%')
        c.disconnect()
        assert sorted(s.state()['running']['vlans']) == ['1', '501', '502', '503', '504']
    finally:
        assert s.stop() == 0


def test_restart_keeps_saved_config_and_factory_resets(tmp_path):
    state = tmp_path / 'restart.json'
    s = Sim(state, '--ports', '8', '--host-key', tmp_path / 'hostkey')
    cli = s.cli()
    for line in ('enable', 'configure terminal', 'vlan 10', 'interface ethernet 1/1 mtu 9216 force', 'configuration write',
                 'vlan 20'):
        assert cli.cmd(line) == ''
    key1 = cli.client.get_transport().get_remote_server_key().get_base64()
    cli.close()
    assert s.stop() == 0
    s = Sim(state, '--host-key', tmp_path / 'hostkey')
    try:
        st = s.state()
        assert sorted(st['running']['vlans']) == ['1', '10'] and st['running'] == st['saved']
        assert st['running']['ports']['1/1']['mtu'] == 9216 and len(st['ports']) == 8 and st['logins'] == 1
        cli = s.cli()
        assert cli.client.get_transport().get_remote_server_key().get_base64() == key1
        cli.cmd('enable')
        assert '   vlan 10' in cli.cmd('show running-config').splitlines()
        cli.close()
    finally:
        assert s.stop() == 0
    s = Sim(state, '--factory', '--ports', '4')
    try:
        st = s.state()
        assert sorted(st['running']['vlans']) == ['1'] and st['ports'] == ['1/1', '1/2', '1/3', '1/4'] and st['logins'] == 0
    finally:
        assert s.stop() == 0


def test_public_key_authentication(tmp_path):
    key = paramiko.ECDSAKey.generate()
    pub = tmp_path / 'id.pub'
    pub.write_text('%s %s test@lab\n' % (key.get_name(), key.get_base64()))
    s = Sim(tmp_path / 'pk.json', '--ports', '4', '--authorized-key', pub)
    try:
        cli = RawCli(s.port, pkey=key)
        assert cli.cmd('show version | json-print').startswith('{')
        cli.close()
        with pytest.raises(paramiko.AuthenticationException):
            RawCli(s.port, pkey=paramiko.ECDSAKey.generate())
        assert s.state()['logins'] == 1
    finally:
        assert s.stop() == 0


def test_interface_counters_have_the_real_labels_and_the_armed_values(sim, conn):
    """show interfaces ethernet | json-print carries the Rx and Tx objects with the labels of a real switch's output
    (the corpus sample from mellanox.onyx), 0 but for what the lab armed; the text form prints the same values."""
    real = json.loads(corpus_body('show_interfaces_json_counters_mellanox_onyx.txt'))[0]
    sim.set_faults(counters={'1/2': {'Rx': {'error packets': 25}, 'Tx': {'discard packets': 7}}})
    attrs = json.loads(conn.send_command('show interfaces ethernet 1/2 | json-print'))[0]['Eth1/2'][0]
    assert set(attrs['Rx']) == set(real['Rx']) and set(attrs['Tx']) == set(real['Tx'])
    assert attrs['Rx']['error packets'] == '25' and attrs['Tx']['discard packets'] == '7'
    assert attrs['Rx']['discard packets'] == '0'
    text = conn.send_command('show interfaces ethernet 1/2')
    assert re.search(r'^\s+25\s+error packets$', text, re.M), text
    sim.set_faults(counters={})
