// Command vcsim-roce runs the vSphere API simulator for the roce.fabric lab: a vCenter with one
// cluster of ESXi hosts and VMs, with the lab's additions (overlay/roce_lab.go) set up from a
// topology file: kernel boot settings, PCI devices with NUMA nodes, passthrough devices on VMs.
//
// Besides the SOAP API on /sdk it serves, for tests on loopback only:
//
//	GET  /roce/state              hosts (Configured/Runtime boot settings, maintenance, reboots) and VMs
//	POST /roce/calls/reset        zero the per-method SOAP call counters (in /roce/state "calls")
//	POST /roce/hang?host=H&on=1   make host H's next reboot never come back
//	POST /roce/reboot_required?host=H&on=1   hold H's summary.rebootRequired set, across reboots (a staged update)
package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io/ioutil"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

type pciDevice struct {
	ID          string `json:"id"`
	Vendor      string `json:"vendor"`
	Device      string `json:"device"`
	VendorName  string `json:"vendor_name"`
	DeviceName  string `json:"device_name"`
	Class       string `json:"class"`
	NumaNode    int    `json:"numa_node"`
	Passthrough bool   `json:"passthrough"`
}

type hostSpec struct {
	Name string      `json:"name"`
	PCI  []pciDevice `json:"pci"`
}

type vmSpec struct {
	Name        string   `json:"name"`
	Host        string   `json:"host"`
	Passthrough []string `json:"passthrough"`
	PowerState  string   `json:"power_state"`
}

type topology struct {
	Hosts   []hostSpec             `json:"hosts"`
	VMs     []vmSpec               `json:"vms"`
	Options []simulator.RoceOption `json:"options"`
}

var defaultOptions = []simulator.RoceOption{
	{Key: "VMkernel.Boot.atsSupport", Type: "bool", Default: false, Summary: "Enable Support for PCIe ATS"},
	{Key: "VMkernel.Boot.disableACSCheck", Type: "bool", Default: false, Summary: "Disable ACS capability check"},
	{Key: "VMkernel.Boot.execInstalledOnly", Type: "bool", Default: false, Summary: "Allow only installed binaries to execute"},
	{Key: "VMkernel.Boot.maxPCPUS", Type: "long", Default: float64(4096), Summary: "Number of PCPUs vmkernel should bring up."},
	{Key: "VMkernel.Boot.vmkacEnable", Type: "long", Default: float64(1), Summary: "VMkernel access control (0 off, 1 audit, 2 enforce)"},
	{Key: "Net.TcpipHeapMax", Type: "long", Default: float64(1024), Summary: "Max megabytes the tcpip module heap can grow to."},
}

// A host of the default topology: four A100 GPUs and two ConnectX-6 Dx NICs over two NUMA nodes.
func defaultPCI() []pciDevice {
	gpu := func(id string, numa int) pciDevice {
		return pciDevice{ID: id, Vendor: "0x10de", Device: "0x20b5", VendorName: "NVIDIA Corporation",
			DeviceName: "GA100 [A100 PCIe 80GB]", Class: "0x0302", NumaNode: numa, Passthrough: true}
	}
	nic := func(id string, numa int) pciDevice {
		return pciDevice{ID: id, Vendor: "0x15b3", Device: "0x101d", VendorName: "Mellanox Technologies",
			DeviceName: "MT2892 Family [ConnectX-6 Dx]", Class: "0x0200", NumaNode: numa, Passthrough: true}
	}
	return []pciDevice{gpu("0000:17:00.0", 0), gpu("0000:31:00.0", 0), gpu("0000:b1:00.0", 1), gpu("0000:ca:00.0", 1),
		nic("0000:3b:00.0", 0), nic("0000:86:00.0", 1)}
}

func hexValue(s string) int64 {
	v, _ := strconv.ParseInt(s, 0, 64)
	return v
}

func setupTopology(topo *topology) error {
	hosts := simulator.Map.All("HostSystem")
	sort.Slice(hosts, func(i, j int) bool { return hosts[i].Entity().Name < hosts[j].Entity().Name })
	vms := simulator.Map.All("VirtualMachine")
	sort.Slice(vms, func(i, j int) bool { return vms[i].Entity().Name < vms[j].Entity().Name })
	if len(topo.Hosts) == 0 {
		for range hosts {
			topo.Hosts = append(topo.Hosts, hostSpec{PCI: defaultPCI()})
		}
	}
	if len(topo.Hosts) > len(hosts) {
		return fmt.Errorf("topology has %d hosts, the model %d", len(topo.Hosts), len(hosts))
	}
	if len(topo.Options) == 0 {
		topo.Options = defaultOptions
	}
	byName := map[string]*simulator.HostSystem{}
	pciByHost := map[string][]pciDevice{}
	for i, e := range hosts {
		h := e.(*simulator.HostSystem)
		spec := hostSpec{PCI: defaultPCI()}
		if i < len(topo.Hosts) {
			spec = topo.Hosts[i]
		}
		if spec.Name != "" {
			h.Name = spec.Name
			h.Summary.Config.Name = spec.Name
		}
		byName[h.Name] = h
		pciByHost[h.Name] = spec.PCI
		h.Capability = &types.HostCapability{RebootSupported: true, ShutdownSupported: true, MaintenanceModeSupported: true}
		// Own copies of the hardware lists, with the lab's devices and NUMA nodes.
		hw := *h.Hardware
		hw.PciDevice = append([]types.HostPciDevice{}, h.Hardware.PciDevice...)
		numa := &types.HostNumaInfo{Type: "NUMA", NumNodes: 2}
		for n := 0; n < 2; n++ {
			numa.NumaNode = append(numa.NumaNode, types.HostNumaNode{TypeId: byte(n), CpuID: []int16{int16(2 * n), int16(2*n + 1)},
				MemoryRangeBegin: int64(n) << 36, MemoryRangeLength: 1 << 36})
		}
		var passthru []types.BaseHostPciPassthruInfo
		for _, d := range spec.PCI {
			var bus, slot, fn int64
			fmt.Sscanf(d.ID, "0000:%x:%x.%x", &bus, &slot, &fn)
			hw.PciDevice = append(hw.PciDevice, types.HostPciDevice{Id: d.ID, ClassId: int16(hexValue(d.Class)), Bus: byte(bus),
				Slot: byte(slot), Function: byte(fn), VendorId: int16(hexValue(d.Vendor)), VendorName: d.VendorName,
				DeviceId: int16(hexValue(d.Device)), DeviceName: d.DeviceName})
			if d.NumaNode >= 0 && d.NumaNode < 2 {
				numa.NumaNode[d.NumaNode].PciId = append(numa.NumaNode[d.NumaNode].PciId, d.ID)
			}
			passthru = append(passthru, &types.HostPciPassthruInfo{Id: d.ID, DependentDevice: d.ID,
				PassthruEnabled: d.Passthrough, PassthruCapable: true, PassthruActive: d.Passthrough})
		}
		hw.NumaInfo = numa
		h.Hardware = &hw
		h.Config.PciPassthruInfo = passthru
		simulator.Roce.RoceInstallOptions(h, topo.Options)
		simulator.Roce.RoceInstallVsan(h)
	}
	// VMs: explicit placement from the topology, otherwise round-robin over the hosts, each with one
	// GPU and the NIC on the GPU's NUMA node.
	if len(topo.VMs) == 0 {
		for i, e := range vms {
			h := hosts[i%len(hosts)].(*simulator.HostSystem)
			k := i / len(hosts)
			pci := pciByHost[h.Name]
			var gpus, nics []pciDevice
			for _, d := range pci {
				if d.Class == "0x0302" {
					gpus = append(gpus, d)
				} else if d.Class == "0x0200" {
					nics = append(nics, d)
				}
			}
			spec := vmSpec{Name: e.Entity().Name, Host: h.Name}
			if len(gpus) > 0 {
				g := gpus[k%len(gpus)]
				spec.Passthrough = append(spec.Passthrough, g.ID)
				for _, n := range nics {
					if n.NumaNode == g.NumaNode {
						spec.Passthrough = append(spec.Passthrough, n.ID)
						break
					}
				}
			}
			topo.VMs = append(topo.VMs, spec)
		}
	}
	if len(topo.VMs) > len(vms) {
		return fmt.Errorf("topology has %d VMs, the model %d", len(topo.VMs), len(vms))
	}
	for i, spec := range topo.VMs {
		vm := vms[i].(*simulator.VirtualMachine)
		h := byName[spec.Host]
		if h == nil {
			return fmt.Errorf("VM %s: no host %q", spec.Name, spec.Host)
		}
		if spec.Name != "" {
			vm.Name = spec.Name
			vm.Config.Name = spec.Name
			vm.Summary.Config.Name = spec.Name
		}
		if old, ok := simulator.Map.Get(*vm.Runtime.Host).(*simulator.HostSystem); ok {
			simulator.Map.RemoveReference(old, &old.Vm, vm.Self)
		}
		ref := h.Self
		vm.Runtime.Host = &ref
		vm.Summary.Runtime.Host = &ref
		simulator.Map.AppendReference(h, &h.Vm, vm.Self)
		if spec.PowerState != "" {
			vm.Runtime.PowerState = types.VirtualMachinePowerState(spec.PowerState)
			vm.Summary.Runtime.PowerState = vm.Runtime.PowerState
		}
		for n, id := range spec.Passthrough {
			var dev *pciDevice
			for j := range pciByHost[h.Name] {
				if pciByHost[h.Name][j].ID == id {
					dev = &pciByHost[h.Name][j]
				}
			}
			if dev == nil {
				return fmt.Errorf("VM %s: host %s has no PCI device %s", vm.Name, h.Name, id)
			}
			unit := int32(n)
			vm.Config.Hardware.Device = append(vm.Config.Hardware.Device, &types.VirtualPCIPassthrough{
				VirtualDevice: types.VirtualDevice{
					Key:           int32(13000 + n),
					DeviceInfo:    &types.Description{Label: fmt.Sprintf("PCI device %d", n), Summary: dev.DeviceName},
					ControllerKey: 100,
					UnitNumber:    &unit,
					Backing: &types.VirtualPCIPassthroughDeviceBackingInfo{
						VirtualDeviceDeviceBackingInfo: types.VirtualDeviceDeviceBackingInfo{DeviceName: dev.DeviceName},
						Id:                             dev.ID,
						DeviceId:                       fmt.Sprintf("%x", hexValue(dev.Device)),
						SystemId:                       "5f5b3c4a-0000-0000-0000-000000000000",
						VendorId:                       int16(hexValue(dev.Vendor)),
					},
				},
			})
		}
	}
	return nil
}

var soapMethod = regexp.MustCompile(`<(?:[A-Za-z0-9_]+:)?Body[^>]*>\s*<(?:[A-Za-z0-9_]+:)?([A-Za-z0-9_]+)`)

type counter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *counter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/roce/state":
			state, err := simulator.Roce.RoceState()
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			var doc map[string]interface{}
			_ = json.Unmarshal(state, &doc)
			c.mu.Lock()
			doc["calls"] = c.calls
			out, _ := json.Marshal(doc)
			c.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(out)
			return
		case "/roce/calls/reset":
			c.mu.Lock()
			c.calls = map[string]int{}
			c.mu.Unlock()
			return
		case "/roce/reboot_required":
			if !simulator.Roce.RoceSetStickyRebootRequired(r.URL.Query().Get("host"), r.URL.Query().Get("on") == "1") {
				http.Error(w, "no such host", 404)
			}
			return
		case "/roce/hang":
			if !simulator.Roce.RoceSetHang(r.URL.Query().Get("host"), r.URL.Query().Get("on") == "1") {
				http.Error(w, "no such host", 404)
			}
			return
		}
		if r.Method == http.MethodPost {
			body, err := ioutil.ReadAll(r.Body)
			if err == nil {
				if m := soapMethod.FindSubmatch(body); m != nil {
					c.mu.Lock()
					c.calls[string(m[1])]++
					c.mu.Unlock()
				}
				r.Body = ioutil.NopCloser(bytes.NewReader(body))
			}
		}
		next.ServeHTTP(w, r)
	})
}

func main() {
	listen := flag.String("l", "127.0.0.1:8989", "listen address")
	hosts := flag.Int("host", 3, "ESXi hosts in the cluster")
	vms := flag.Int("vm", 2, "VMs in the cluster")
	username := flag.String("username", "user", "login user")
	passwordFile := flag.String("password-file", "", "file holding the login password (its first line); "+
		"never on the command line, where any local user reads it")
	useTLS := flag.Bool("tls", true, "serve HTTPS (a self-signed certificate)")
	topoFile := flag.String("topology", "", "JSON topology: hosts, their PCI devices, VMs")
	rebootSeconds := flag.Float64("reboot-seconds", 2, "how long a rebooting host does not respond")
	flag.Parse()
	if *passwordFile == "" {
		log.Fatal("-password-file is required")
	}
	secret, err := ioutil.ReadFile(*passwordFile)
	if err != nil {
		log.Fatal(err)
	}
	password := strings.SplitN(string(secret), "\n", 2)[0]
	if password == "" {
		log.Fatalf("%s: empty password", *passwordFile)
	}

	topo := &topology{}
	if *topoFile != "" {
		data, err := ioutil.ReadFile(*topoFile)
		if err != nil {
			log.Fatal(err)
		}
		if err := json.Unmarshal(data, topo); err != nil {
			log.Fatalf("%s: %s", *topoFile, err)
		}
	}
	model := simulator.VPX()
	model.Host = 0
	model.ClusterHost = *hosts
	model.Machine = *vms
	model.Autostart = true
	if err := model.Create(); err != nil {
		log.Fatal(err)
	}
	simulator.Roce.RebootSeconds = *rebootSeconds
	if err := setupTopology(topo); err != nil {
		log.Fatal(err)
	}
	u, err := url.Parse("http://" + *listen)
	if err != nil {
		log.Fatal(err)
	}
	// Only this user and password may log in (the simulator's default accepts any).
	u.User = url.UserPassword(*username, password)
	model.Service.Listen = u
	if *useTLS {
		model.Service.TLS = new(tls.Config)
	}
	server := model.Service.NewServer()
	c := &counter{calls: map[string]int{}}
	server.Server.Config.Handler = c.wrap(server.Server.Config.Handler)
	fmt.Printf("VCSIM_URL=%s://%s/sdk\n", server.URL.Scheme, server.URL.Host)
	os.Stdout.Sync()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	server.Close()
	model.Remove()
}
