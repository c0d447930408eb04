package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// The init lock makes sure only one control-plane Machine of a Cluster is
// given "init" bootstrap data, like the kubeadm provider's
// control-plane-init mutex: a ConfigMap created atomically (the API
// server refuses a second create), naming the Machine that holds it. A
// lock whose holder Machine no longer exists is broken. The lock is
// released once the Cluster reports its control plane initialised, when
// its holder's config is deleted, or when the holder's config fails before
// its data Secret exists (renderData). While another config's init data
// Secret exists the lock is not taken, held or broken: that machine may be
// initialising the cluster, whatever the lock says.

const lockHolderKey = "machine"

func initLockName(cluster string) string { return cluster + "-machineadm-init-lock" }

// acquireInitLock reports whether machine (with its config of that name)
// holds the Cluster's init lock, taking it when it is free and no other
// config's init data exists (initDataOfOthers).
func acquireInitLock(ctx context.Context, c client.Client, cl *clusterv1.Cluster, machine, config string) (bool, error) {
	if other, err := initDataOfOthers(ctx, c, cl, config); err != nil || other != "" {
		return false, err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      initLockName(cl.Name),
			Namespace: cl.Namespace,
			Labels:    map[string]string{clusterv1.ClusterNameLabel: cl.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cl.Name, UID: cl.UID,
			}},
		},
		Data: map[string]string{lockHolderKey: machine},
	}
	err := c.Create(ctx, cm)
	if err == nil {
		return true, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return false, err
	}
	held := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), held); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	holder := held.Data[lockHolderKey]
	if holder == machine {
		return true, nil
	}
	// Break a lock whose holder is gone; the next reconcile may take it.
	err = c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: holder}, &clusterv1.Machine{})
	if apierrors.IsNotFound(err) {
		return false, client.IgnoreNotFound(c.Delete(ctx, held, client.Preconditions{UID: &held.UID}))
	}
	return false, err
}

// releaseInitLock deletes the lock; when machine is not empty, only if
// that Machine holds it.
func releaseInitLock(ctx context.Context, c client.Client, cl *clusterv1.Cluster, machine string) error {
	held := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: initLockName(cl.Name)}, held); err != nil {
		return client.IgnoreNotFound(err)
	}
	if machine != "" && held.Data[lockHolderKey] != machine {
		return nil
	}
	return client.IgnoreNotFound(c.Delete(ctx, held, client.Preconditions{UID: &held.UID}))
}

// initDataOfOthers names a data Secret of the Cluster, other than config's,
// that holds init data (ActionAnnotation "init"), or "". Data Secrets are
// found by Cluster API's cluster-name label and Secret type, and counted
// only when a MachineadmConfig controls them.
func initDataOfOthers(ctx context.Context, c client.Client, cl *clusterv1.Cluster, config string) (string, error) {
	list := &corev1.SecretList{}
	if err := c.List(ctx, list, client.InNamespace(cl.Namespace), client.MatchingLabels{clusterv1.ClusterNameLabel: cl.Name}); err != nil {
		return "", err
	}
	for i := range list.Items {
		s := &list.Items[i]
		o := metav1.GetControllerOf(s)
		if s.Name == config || s.Type != ClusterSecretType || o == nil || o.Kind != "MachineadmConfig" {
			continue
		}
		if s.Annotations[ActionAnnotation] == "init" {
			return s.Name, nil
		}
	}
	return "", nil
}
