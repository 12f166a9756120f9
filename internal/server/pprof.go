package server

import (
	"net/http"
	"net/http/pprof"
	runtimepprof "runtime/pprof"

	"github.com/julienschmidt/httprouter"
)

// RoutePprof serves the pprof index, the CPU profile, the execution trace and the runtime's profiles (heap,
// goroutine, ...), each by name: httprouter cannot put fixed names beside a wildcard.
func RoutePprof(router *httprouter.Router) {
	router.HandlerFunc(http.MethodGet, "/debug/pprof/", pprof.Index)
	router.HandlerFunc(http.MethodGet, "/debug/pprof/profile", pprof.Profile)
	router.HandlerFunc(http.MethodGet, "/debug/pprof/trace", pprof.Trace)
	for _, p := range runtimepprof.Profiles() {
		router.Handler(http.MethodGet, "/debug/pprof/"+p.Name(), pprof.Handler(p.Name()))
	}
}
