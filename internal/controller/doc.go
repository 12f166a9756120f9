// Package controller holds llmbudget's hook service: its five Metacontroller controllers, one file each, and what
// they share.
//
//   - budget.go: the LLMCostBudget CompositeController (route budget).
//   - clusterbudget.go: the ClusterLLMCostBudget CompositeController (route clusterbudget).
//   - workload.go: the DecoratorController over the workloads labelled with a budget (route workload).
//   - namespace.go: the Namespace DecoratorController, a namespace's block posture (route namespace).
//   - gate.go: the DecoratorController over the budgets, their gate label (route gate).
//   - sync.go: the flow both budget kinds' syncs share; render.go: the Events and ResourceQuotas it renders.
//   - routes.go: the controllers at their routes, on package metacontroller's handler; metrics.go: the service's
//     metrics.
//   - eval.go: the budget controllers' answers for budgets read from files (llmbudget eval).
//
// The controllers are pure: a response follows from the request and the clock the handler passes (or eval's
// files and --now), never from a call to the API server.
package controller
