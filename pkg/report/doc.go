// Package report defines machineadm's outcome report: error classes, the
// versioned BootstrapReport document, and its writers.
package report
