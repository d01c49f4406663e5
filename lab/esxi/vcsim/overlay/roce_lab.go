// roce.fabric lab additions to the vSphere simulator, compiled into its package with
// `go build -overlay` (see lab/esxi/peer_vcsim.py): ESXi kernel boot settings as host advanced
// options with a Configured (next boot) and a Runtime value, host reboots that refuse outside
// maintenance mode and apply pending boot settings, PCI passthrough devices with NUMA placement,
// VM extraConfig changes that replace and remove keys as vCenter does, and a vSAN system per host.

package simulator

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// RoceBootPrefix marks advanced options that are kernel boot settings: a change is configured
// for the next boot and becomes the runtime value when the host reboots.
const RoceBootPrefix = "VMkernel.Boot."

// RoceOption describes one advanced option a host supports.
type RoceOption struct {
	Key     string      `json:"key"`
	Type    string      `json:"type"` // bool, long, int or string
	Default interface{} `json:"default"`
	Summary string      `json:"summary"`
}

// RoceLab holds the state the additions keep beside the inventory objects.
type RoceLab struct {
	mu            sync.Mutex
	RebootSeconds float64
	runtime       map[string]map[string]interface{} // host moid -> boot option -> runtime value
	reboots       map[string]int
	hang          map[string]bool
	sticky        map[string]bool               // host moid -> summary.rebootRequired held set (a staged update)
	options       map[string]*RoceOptionManager // host moid -> its option manager
	reboots_log   []map[string]interface{}      // every reboot: host, started, back (RFC 3339, back empty while down)
}

// Roce is the single instance main.go configures.
var Roce = &RoceLab{
	RebootSeconds: 2,
	runtime:       map[string]map[string]interface{}{},
	reboots:       map[string]int{},
	hang:          map[string]bool{},
	sticky:        map[string]bool{},
	options:       map[string]*RoceOptionManager{},
}

// RoceOptionManager is a host's own advanced option manager: typed, validated, per host.
type RoceOptionManager struct {
	mo.OptionManager
	host *HostSystem
}

func roceOptionValue(opt RoceOption, value interface{}) interface{} {
	switch opt.Type {
	case "bool":
		b, _ := value.(bool)
		return b
	case "long", "int":
		switch v := value.(type) {
		case float64:
			if opt.Type == "int" {
				return int32(v)
			}
			return int64(v)
		}
		return value
	default:
		return fmt.Sprint(value)
	}
}

func roceOptionType(opt RoceOption) types.BaseOptionType {
	switch opt.Type {
	case "bool":
		b, _ := opt.Default.(bool)
		return &types.BoolOption{Supported: true, DefaultValue: b}
	case "long":
		d, _ := opt.Default.(float64)
		return &types.LongOption{Min: 0, Max: 1 << 40, DefaultValue: int64(d)}
	case "int":
		d, _ := opt.Default.(float64)
		return &types.IntOption{Min: 0, Max: 1 << 30, DefaultValue: int32(d)}
	default:
		return &types.StringOption{DefaultValue: fmt.Sprint(opt.Default)}
	}
}

// RoceInstallOptions gives a host its own option manager with the lab's supported options.
func (l *RoceLab) RoceInstallOptions(h *HostSystem, options []RoceOption) {
	m := &RoceOptionManager{host: h}
	m.Self.Type = "OptionManager" // what clients see; the Go type name is the simulator's business
	// Keep the stock settings, but as copies: the stock list is shared by every host.
	for _, s := range Map.Get(*h.ConfigManager.AdvancedOption).(*OptionManager).Setting {
		v := *s.GetOptionValue()
		m.Setting = append(m.Setting, &v)
	}
	runtime := map[string]interface{}{}
	for _, opt := range options {
		value := roceOptionValue(opt, opt.Default)
		m.Setting = append(m.Setting, &types.OptionValue{Key: opt.Key, Value: value})
		m.SupportedOption = append(m.SupportedOption, types.OptionDef{
			ElementDescription: types.ElementDescription{
				Description: types.Description{Label: opt.Key, Summary: opt.Summary},
				Key:         opt.Key,
			},
			OptionType: roceOptionType(opt),
		})
		if strings.HasPrefix(opt.Key, RoceBootPrefix) {
			runtime[opt.Key] = value
		}
	}
	ref := Map.Put(m).Reference()
	h.ConfigManager.AdvancedOption = &ref
	l.mu.Lock()
	l.runtime[h.Self.Value] = runtime
	l.options[h.Self.Value] = m
	l.mu.Unlock()
}

func (m *RoceOptionManager) find(key string) *types.OptionValue {
	for _, s := range m.Setting {
		if s.GetOptionValue().Key == key {
			return s.GetOptionValue()
		}
	}
	return nil
}

func (m *RoceOptionManager) def(key string) *types.OptionDef {
	for i := range m.SupportedOption {
		if m.SupportedOption[i].Key == key {
			return &m.SupportedOption[i]
		}
	}
	return nil
}

// QueryOptions answers settings whose key starts with the name (a trailing '.' selects a group).
func (m *RoceOptionManager) QueryOptions(req *types.QueryOptions) soap.HasFault {
	body := &methods.QueryOptionsBody{}
	res := &types.QueryOptionsResponse{}
	for _, s := range m.Setting {
		key := s.GetOptionValue().Key
		if req.Name == "" || key == req.Name || (strings.HasSuffix(req.Name, ".") && strings.HasPrefix(key, req.Name)) {
			res.Returnval = append(res.Returnval, s)
		}
	}
	if len(res.Returnval) == 0 {
		body.Fault_ = Fault("", &types.InvalidName{Name: req.Name})
		return body
	}
	body.Res = res
	return body
}

func roceTypeMatches(def *types.OptionDef, value interface{}) bool {
	switch def.OptionType.(type) {
	case *types.BoolOption:
		_, ok := value.(bool)
		return ok
	case *types.LongOption:
		_, ok := value.(int64)
		return ok
	case *types.IntOption:
		_, ok := value.(int32)
		return ok
	case *types.StringOption:
		_, ok := value.(string)
		return ok
	}
	return false
}

// UpdateOptions validates every change first (unknown key, wrong type) and applies none on error,
// as ESXi does. A changed boot setting marks the host as needing a reboot.
func (m *RoceOptionManager) UpdateOptions(req *types.UpdateOptions) soap.HasFault {
	body := new(methods.UpdateOptionsBody)
	for _, change := range req.ChangedValue {
		setting := change.GetOptionValue()
		def := m.def(setting.Key)
		if def == nil && m.find(setting.Key) == nil {
			body.Fault_ = Fault("", &types.InvalidName{Name: setting.Key})
			return body
		}
		if def != nil && !roceTypeMatches(def, setting.Value) {
			body.Fault_ = Fault(fmt.Sprintf("Invalid value for %s: %v is not of type %s", setting.Key, setting.Value,
				strings.TrimSuffix(reflect.TypeOf(def.OptionType).Elem().Name(), "Option")),
				&types.InvalidArgument{InvalidProperty: setting.Key})
			return body
		}
	}
	for _, change := range req.ChangedValue {
		setting := change.GetOptionValue()
		if opt := m.find(setting.Key); opt != nil {
			opt.Value = setting.Value
		}
	}
	Roce.refreshRebootRequired(m.host)
	body.Res = new(types.UpdateOptionsResponse)
	return body
}

func roceEqual(a, b interface{}) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func (l *RoceLab) refreshRebootRequired(h *HostSystem) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.options[h.Self.Value]
	if m == nil {
		return
	}
	pending := false
	for key, value := range l.runtime[h.Self.Value] {
		if opt := m.find(key); opt != nil && !roceEqual(opt.Value, value) {
			pending = true
		}
	}
	h.Summary.RebootRequired = pending || l.sticky[h.Self.Value]
}

func (l *RoceLab) boot(h *HostSystem) {
	l.mu.Lock()
	m := l.options[h.Self.Value]
	for key := range l.runtime[h.Self.Value] {
		if opt := m.find(key); opt != nil {
			l.runtime[h.Self.Value][key] = opt.Value
		}
	}
	l.reboots[h.Self.Value]++
	for i := len(l.reboots_log) - 1; i >= 0; i-- {
		if l.reboots_log[i]["host"] == h.Name && l.reboots_log[i]["back"] == "" {
			l.reboots_log[i]["back"] = time.Now().UTC().Format(time.RFC3339Nano)
			break
		}
	}
	l.mu.Unlock()
	now := time.Now()
	h.Runtime.BootTime = &now
	h.Runtime.ConnectionState = types.HostSystemConnectionStateConnected
	h.Runtime.PowerState = types.HostSystemPowerStatePoweredOn
	l.refreshRebootRequired(h)
}

func (l *RoceLab) restart(h *HostSystem, force bool, name string) types.BaseMethodFault {
	if !h.Runtime.InMaintenanceMode && !force {
		return &types.InvalidState{}
	}
	if h.Runtime.ConnectionState != types.HostSystemConnectionStateConnected {
		return &types.HostNotConnected{}
	}
	// Running VMs go down with their host.
	for _, ref := range h.Vm {
		if vm, ok := Map.Get(ref).(*VirtualMachine); ok {
			Map.WithLock(vm, func() {
				vm.Runtime.PowerState = types.VirtualMachinePowerStatePoweredOff
				vm.Summary.Runtime.PowerState = types.VirtualMachinePowerStatePoweredOff
			})
		}
	}
	h.Runtime.ConnectionState = types.HostSystemConnectionStateNotResponding
	if name == "shutdown" {
		h.Runtime.PowerState = types.HostSystemPowerStatePoweredOff
		return nil
	}
	l.mu.Lock()
	l.reboots_log = append(l.reboots_log, map[string]interface{}{"host": h.Name, "started": time.Now().UTC().Format(time.RFC3339Nano), "back": ""})
	hang := l.hang[h.Self.Value]
	delay := time.Duration(l.RebootSeconds * float64(time.Second))
	l.mu.Unlock()
	if hang {
		return nil
	}
	go func() {
		time.Sleep(delay)
		Map.WithLock(h, func() { l.boot(h) })
	}()
	return nil
}

// RebootHostTask reboots the host: refused outside maintenance mode unless forced.
func (h *HostSystem) RebootHostTask(req *types.RebootHost_Task) soap.HasFault {
	task := CreateTask(h, "rebootHost", func(t *Task) (types.AnyType, types.BaseMethodFault) {
		return nil, Roce.restart(h, req.Force, "reboot")
	})
	return &methods.RebootHost_TaskBody{Res: &types.RebootHost_TaskResponse{Returnval: task.Run()}}
}

// ShutdownHostTask powers the host off: refused outside maintenance mode unless forced.
func (h *HostSystem) ShutdownHostTask(req *types.ShutdownHost_Task) soap.HasFault {
	task := CreateTask(h, "shutdownHost", func(t *Task) (types.AnyType, types.BaseMethodFault) {
		return nil, Roce.restart(h, req.Force, "shutdown")
	})
	return &methods.ShutdownHost_TaskBody{Res: &types.ShutdownHost_TaskResponse{Returnval: task.Run()}}
}

// roceHost is the host of that name, or nil.
func roceHost(name string) *HostSystem {
	for _, e := range Map.All("HostSystem") {
		if h := e.(*HostSystem); h.Name == name {
			return h
		}
	}
	return nil
}

// RoceSetHang makes a host's next reboot never come back (a fault for tests).
func (l *RoceLab) RoceSetHang(name string, hang bool) bool {
	h := roceHost(name)
	if h == nil {
		return false
	}
	l.mu.Lock()
	l.hang[h.Self.Value] = hang
	l.mu.Unlock()
	return true
}

// RoceSetStickyRebootRequired holds a host's summary.rebootRequired set whatever its boot options say, across
// reboots: what a staged update that waits for a reboot of its own looks like through the API (a fault for tests).
func (l *RoceLab) RoceSetStickyRebootRequired(name string, on bool) bool {
	h := roceHost(name)
	if h == nil {
		return false
	}
	l.mu.Lock()
	l.sticky[h.Self.Value] = on
	l.mu.Unlock()
	Map.WithLock(h, func() { l.refreshRebootRequired(h) })
	return true
}

// RoceState is the lab's view of every host and VM, for tests that read state from outside.
func (l *RoceLab) RoceState() ([]byte, error) {
	hosts := map[string]interface{}{}
	for _, e := range Map.All("HostSystem") {
		h := e.(*HostSystem)
		Map.WithLock(h, func() {
			configured := map[string]interface{}{}
			l.mu.Lock()
			runtime := map[string]interface{}{}
			for k, v := range l.runtime[h.Self.Value] {
				runtime[k] = v
			}
			if m := l.options[h.Self.Value]; m != nil {
				for _, s := range m.Setting {
					o := s.GetOptionValue()
					if strings.HasPrefix(o.Key, RoceBootPrefix) {
						configured[o.Key] = o.Value
					}
				}
			}
			entry := map[string]interface{}{
				"moid":             h.Self.Value,
				"connection_state": h.Runtime.ConnectionState,
				"maintenance_mode": h.Runtime.InMaintenanceMode,
				"reboot_required":  h.Summary.RebootRequired,
				"reboots":          l.reboots[h.Self.Value],
				"reboot_hangs":     l.hang[h.Self.Value],
				"configured":       configured,
				"runtime":          runtime,
				"boot_time":        h.Runtime.BootTime,
			}
			l.mu.Unlock()
			var vms []string
			for _, ref := range h.Vm {
				if vm, ok := Map.Get(ref).(*VirtualMachine); ok {
					vms = append(vms, vm.Name)
				}
			}
			sort.Strings(vms)
			entry["vms"] = vms
			hosts[h.Name] = entry
		})
	}
	vms := map[string]interface{}{}
	for _, e := range Map.All("VirtualMachine") {
		vm := e.(*VirtualMachine)
		Map.WithLock(vm, func() {
			extra := map[string]interface{}{}
			entries := []map[string]interface{}{}
			for _, o := range vm.Config.ExtraConfig {
				v := o.GetOptionValue()
				extra[v.Key] = v.Value
				entries = append(entries, map[string]interface{}{"key": v.Key, "value": v.Value})
			}
			var passthru []string
			for _, d := range vm.Config.Hardware.Device {
				if p, ok := d.(*types.VirtualPCIPassthrough); ok {
					if b, ok := p.Backing.(*types.VirtualPCIPassthroughDeviceBackingInfo); ok {
						passthru = append(passthru, b.Id)
					}
				}
			}
			host := ""
			if vm.Runtime.Host != nil {
				if h, ok := Map.Get(*vm.Runtime.Host).(*HostSystem); ok {
					host = h.Name
				}
			}
			vms[vm.Name] = map[string]interface{}{
				"moid":         vm.Self.Value,
				"uuid":         vm.Config.Uuid,
				"host":         host,
				"power_state":  vm.Runtime.PowerState,
				"extra_config": extra,
				// The raw list, in order: a key listed twice or kept with an empty value shows here, not in the map.
				"extra_config_entries": entries,
				"passthrough":  passthru,
			}
		})
	}
	l.mu.Lock()
	log := append([]map[string]interface{}{}, l.reboots_log...)
	l.mu.Unlock()
	return json.Marshal(map[string]interface{}{"hosts": hosts, "vms": vms, "reboot_log": log})
}

// RoceApplyExtraConfigEntry applies one extraConfig entry of a VirtualMachineConfigSpec as vCenter does (vSphere API
// reference, VirtualMachineConfigSpec.extraConfig: "If the key is already present, it will be reset with the new value
// provided. Otherwise, a new option is added. Keys with empty values will be removed."). The stock simulator of
// govmomi 0.24 appends every entry, so a key set twice is listed twice and a key set to "" stays; peer_vcsim.py routes
// its applyExtraConfig here.
func RoceApplyExtraConfigEntry(list []types.BaseOptionValue, entry types.BaseOptionValue) []types.BaseOptionValue {
	val := entry.GetOptionValue()
	empty := val.Value == nil
	if s, ok := val.Value.(string); ok && s == "" {
		empty = true
	}
	out := make([]types.BaseOptionValue, 0, len(list)+1)
	found := false
	for _, existing := range list {
		if existing == nil || existing.GetOptionValue().Key != val.Key {
			out = append(out, existing)
			continue
		}
		if found || empty {
			continue // removed, or a duplicate left by an older state: one entry per key
		}
		found = true
		out = append(out, &types.OptionValue{Key: val.Key, Value: val.Value})
	}
	if !found && !empty {
		out = append(out, &types.OptionValue{Key: val.Key, Value: val.Value})
	}
	return out
}

// RoceVsanSystem is a host's vSAN system (configManager.vsanSystem). Real ESXi always has one, vSAN enabled or not;
// the stock simulator of govmomi 0.24 names it in every host's configManager without the object behind it, so
// clients that read it (community.vmware's vmware_host_facts) fail with "managed object not found". This one answers
// as a host outside any vSAN cluster: config.enabled false and, from QueryHostStatus, health "unknown", node state
// "disabled" and no cluster or node UUID (the facts vmware_host_facts documents for such a host: vsan_cluster_uuid
// null, vsan_node_uuid null, vsan_health unknown).
type RoceVsanSystem struct {
	mo.HostVsanSystem
	host *HostSystem
}

// RoceInstallVsan gives a host its own vSAN system.
func (l *RoceLab) RoceInstallVsan(h *HostSystem) {
	v := &RoceVsanSystem{host: h}
	v.Self.Type = "HostVsanSystem"
	v.Config = types.VsanHostConfigInfo{Enabled: types.NewBool(false), HostSystem: &h.Self}
	ref := Map.Put(v).Reference()
	h.ConfigManager.VsanSystem = &ref
}

// QueryHostStatus answers the host's vSAN cluster status; a host that is not connected (rebooting, powered off)
// answers HostNotConnected, as vCenter does.
func (v *RoceVsanSystem) QueryHostStatus(req *types.QueryHostStatus) soap.HasFault {
	body := new(methods.QueryHostStatusBody)
	if v.host.Runtime.ConnectionState != types.HostSystemConnectionStateConnected {
		body.Fault_ = Fault("Unable to communicate with the remote host, since it is disconnected.", &types.HostNotConnected{})
		return body
	}
	body.Res = &types.QueryHostStatusResponse{Returnval: types.VsanHostClusterStatus{
		Health:    string(types.VsanHostHealthStateUnknown),
		NodeState: types.VsanHostClusterStatusState{State: string(types.VsanHostNodeStateDisabled)},
	}}
	return body
}
