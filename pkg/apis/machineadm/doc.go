// Package machineadm holds the hub (internal) types of the machine spec.
// Every versioned API (v1alpha1, …) converts to and from these types, and
// the rest of machineadm works on them only. They are not serialised to
// users; their JSON tags mirror the newest version so that conversion of
// identical fields is mechanical (see v1alpha1/conversion.go).
package machineadm
