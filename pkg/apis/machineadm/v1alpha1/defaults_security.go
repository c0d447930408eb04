package v1alpha1

import "strings"

// setSecurityDefaults fills the unset fields of the API server's typed
// security settings (types_security.go) with their defaults.
func setSecurityDefaults(a *APIServer) {
	if au := a.Audit; au != nil {
		if au.Log == nil && au.Webhook == nil {
			au.Log = &AuditLog{}
		}
		if l := au.Log; l != nil {
			setString(&l.Path, DefaultAuditLogPath)
			setInt32(&l.MaxAge, DefaultAuditLogMaxAge)
			setInt32(&l.MaxSize, DefaultAuditLogMaxSize)
			setInt32(&l.MaxBackups, DefaultAuditLogMaxBackups)
		}
		if w := au.Webhook; w != nil {
			setString(&w.Mode, DefaultAuditWebhookMode)
		}
	}
	if e := a.Encryption; e != nil {
		for i := range e.Resources {
			for j := range e.Resources[i].Providers {
				if k := e.Resources[i].Providers[j].KMS; k != nil {
					setString(&k.APIVersion, DefaultKMSAPIVersion)
					setString(&k.Timeout, DefaultKMSTimeout)
				}
			}
		}
	}
	if au := a.Authentication; au != nil && au.Webhook != nil {
		setString(&au.Webhook.Version, DefaultAuthenticationWebhookVersion)
		setString(&au.Webhook.CacheTTL, DefaultAuthenticationWebhookCacheTTL)
	}
	if az := a.Authorization; az != nil {
		for i := range az.Authorizers {
			z := &az.Authorizers[i]
			if z.Type != "Webhook" {
				setString(&z.Name, strings.ToLower(z.Type))
			}
			if w := z.Webhook; w != nil {
				setString(&w.AuthorizedTTL, DefaultAuthorizedTTL)
				setString(&w.UnauthorizedTTL, DefaultUnauthorizedTTL)
				setBool(&w.CacheAuthorizedRequests, true)
				setBool(&w.CacheUnauthorizedRequests, true)
			}
		}
	}
}

func setInt32(p **int32, def int32) {
	if *p == nil {
		*p = &def
	}
}

func setBool(p **bool, def bool) {
	if *p == nil {
		*p = &def
	}
}
