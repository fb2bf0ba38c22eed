// Package depcheck holds tests about the root module's dependency graph.
//
// The Kubernetes integration lives in its own module
// (integrations/kube-scheduler) so that importing gpusched never pulls in
// Kubernetes; this test keeps it that way.
package depcheck
