package domainjoin

import (
	"time"

	"golang.org/x/sys/windows"

	"github.com/machineadm/machineadm/pkg/host/domainjoin/netapi"
)

// sysNetAPI is NetAPI on the running Windows.
type sysNetAPI struct{}

func (sysNetAPI) JoinInformation() (string, uint32, error) {
	var name *uint16
	var status uint32
	if err := windows.NetGetJoinInformation(nil, &name, &status); err != nil {
		return "", 0, err
	}
	defer windows.NetApiBufferFree((*byte)(unsafePointer(name)))
	return windows.UTF16PtrToString(name), status, nil
}

func (sysNetAPI) DNSDomain() string {
	n := uint32(256)
	buf := make([]uint16, n)
	if err := windows.GetComputerNameEx(windows.ComputerNameDnsDomain, &buf[0], &n); err != nil {
		return ""
	}
	return windows.UTF16ToString(buf[:n])
}

func (sysNetAPI) JoinDomain(domain, ou, account, password string, options uint32) error {
	d, err := windows.UTF16PtrFromString(domain)
	if err != nil {
		return err
	}
	var o *uint16
	if ou != "" {
		if o, err = windows.UTF16PtrFromString(ou); err != nil {
			return err
		}
	}
	a, err := windows.UTF16PtrFromString(account)
	if err != nil {
		return err
	}
	pw, err := windows.UTF16FromString(password)
	if err != nil {
		return err
	}
	defer clear(pw) // the password does not outlive the call in this buffer
	return netapi.NetJoinDomain(nil, d, o, a, &pw[0], options)
}

func (sysNetAPI) RequestOfflineDomainJoin(blob []byte) error {
	if len(blob) == 0 {
		return windows.ERROR_INVALID_PARAMETER
	}
	winDir, err := windows.GetWindowsDirectory()
	if err != nil {
		return err
	}
	p, err := windows.UTF16PtrFromString(winDir)
	if err != nil {
		return err
	}
	return netapi.NetRequestOfflineDomainJoin(&blob[0], uint32(len(blob)), netapi.ProvisionOnlineCaller, p)
}

func (sysNetAPI) BootTime() (time.Time, error) {
	return time.Now().Add(-windows.DurationSinceBoot()), nil
}
