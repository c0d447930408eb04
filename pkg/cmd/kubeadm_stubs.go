package cmd

import "github.com/spf13/cobra"

func newConfigKubeadmCommand(o *options) *cobra.Command {
	return &cobra.Command{Use: "kubeadm", Hidden: true}
}
func newPKICommand(o *options) *cobra.Command   { return &cobra.Command{Use: "pki", Hidden: true} }
func newTokenCommand(o *options) *cobra.Command { return &cobra.Command{Use: "token", Hidden: true} }
func newBootstrapCommand(o *options) *cobra.Command {
	return &cobra.Command{Use: "bootstrap", Hidden: true}
}
