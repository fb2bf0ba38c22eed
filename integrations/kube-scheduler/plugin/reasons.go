package plugin

import (
	v1 "k8s.io/api/core/v1"
)

// Pending by cause (scheduler mode). A waiting pod's PodScheduled
// condition has a reason token as its reason, not always Unschedulable,
// and its GPUSchedPending events carry the same token as their action, so
// an operator can alert on quota against topology against preemption
// (the same tokens label gpusched_pending_jobs). The library's reasons
// give gpusched's tokens (gpusched.Reason.Token: WaitingForQuota,
// QuotaReserved, InsufficientCapacity, TopologyPlacementFailed,
// Fragmentation, TooLargeForTopology, WaitingForBackfillWindow,
// BlockedByQueueHead, WaitingForPreemptedWorkloads, Unschedulable); the
// host's own causes have the tokens below.
const (
	// TokenWaitingForGangMembers: the pod's gang is incomplete (members
	// not created yet, or being deleted), or it runs on without the pods
	// that ended and this pod waits until the gang's pods are all gone.
	TokenWaitingForGangMembers = "WaitingForGangMembers"
	// TokenGangPartlyBound: the gang was partly bound when the scheduler
	// restarted; the pod is not placed until the gang's pods are
	// recreated.
	TokenGangPartlyBound = "GangPartlyBound"
	// TokenAboveMinimum: an elastic job runs with fewer pods than it has,
	// above its minimum; this one is not placed.
	TokenAboveMinimum = "NotPlacedAboveMinimum"
	// TokenInvalidJob: the pod's input is malformed (a GPUSchedInvalid
	// Warning names the field).
	TokenInvalidJob = "InvalidJob"
	// TokenSchedulerConfig: the scheduler cannot schedule the profile's
	// pods (a queue tree that does not parse, a topology it cannot build,
	// a profile scheduler mode refuses).
	TokenSchedulerConfig = "SchedulerConfigError"
	// TokenNoGPUNodes: no GPU node is known yet.
	TokenNoGPUNodes = "NoGPUNodes"
)

// causeOf records that the event at index i of fx.events has the reason
// token cause (its action).
func (fx *effects) causeOf(i int, cause string) {
	if cause == "" {
		return
	}
	if fx.eventCauses == nil {
		fx.eventCauses = map[int]string{}
	}
	fx.eventCauses[i] = cause
}

// actionEvents is the optional capability of a hostIO to record an event
// with an action (kube's events.k8s.io action field).
type actionEvents interface {
	eventWithAction(pod *v1.Pod, typ, reason, action, msg string)
}

// event records e, with cause as its action when the io can.
func (h *host) event(e podEvent, cause string) {
	if ae, ok := h.io.(actionEvents); ok && cause != "" {
		ae.eventWithAction(e.pod, e.typ, e.why, cause, e.what)
		return
	}
	h.io.event(e.pod, e.typ, e.why, e.what)
}
