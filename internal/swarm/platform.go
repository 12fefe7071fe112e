package swarm

import (
	"runtime"
	"sync"

	"github.com/volanogo/volanogo/internal/buildinfo"
	"github.com/volanogo/volanogo/internal/sysinfo"
)

// Platform is what the Access request carries in the slots where Mark
// sends the JVM's properties (java.vendor, java.version, os.name ...):
// volanogo's build, Go and the operating system.
type Platform struct {
	Vendor, VendorURL, Version, ClassVersion, OSName, OSVersion, OSArch string
}

var (
	platform     Platform
	platformOnce sync.Once
)

func initPlatform() {
	platformOnce.Do(func() {
		v := buildinfo.Get().Version
		if v == "" {
			v = "devel"
		}
		platform = Platform{
			Vendor:       "volanogo",
			VendorURL:    "https://github.com/volanogo/volanogo",
			Version:      runtime.Version(),
			ClassVersion: v,
			OSName:       runtime.GOOS,
			OSVersion:    sysinfo.Collect().Kernel,
			OSArch:       runtime.GOARCH,
		}
	})
}

// PlatformProps is the Platform the swarm's Access requests carry.
func PlatformProps() Platform {
	initPlatform()
	return platform
}
