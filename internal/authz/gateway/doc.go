// Package gateway is the gateway's side of llmbudget authz: the HTTP handler that answers LLM gateways'
// external-authorization calls (server.go), who the caller is (callerid.go), the configuration file (config.go), the
// informers' view of the cluster that the decisions of package authz read (cache.go) and the probes (probes.go).
//
// cache.go is, with the spend writer, the only code of llmbudget that talks to the API server: only the command's
// wiring imports this package, and the hook service never does.
package gateway
