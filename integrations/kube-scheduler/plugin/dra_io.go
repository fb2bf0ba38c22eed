package plugin

import (
	"context"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
)

// kubeDRA is draIO on a running kube-scheduler: the scheduler's own
// ResourceSlice and ResourceClaim informers (those kube's DynamicResources
// plugin reads) and its client.
type kubeDRA struct {
	cs        kubernetes.Interface
	slices    resourcelisters.ResourceSliceLister
	claims    resourcelisters.ResourceClaimLister
	classes   resourcelisters.DeviceClassLister
	hasSynced func() bool
}

// newKubeDRA subscribes to h's ResourceSlice, ResourceClaim and
// DeviceClass informers; poke is called on every change.
func newKubeDRA(h fwk.Handle, poke func()) (*kubeDRA, error) {
	f := h.SharedInformerFactory()
	si, ci, dci := f.Resource().V1().ResourceSlices(), f.Resource().V1().ResourceClaims(), f.Resource().V1().DeviceClasses()
	on := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { poke() }, UpdateFunc: func(any, any) { poke() }, DeleteFunc: func(any) { poke() },
	}
	if _, err := si.Informer().AddEventHandler(on); err != nil {
		return nil, err
	}
	if _, err := ci.Informer().AddEventHandler(on); err != nil {
		return nil, err
	}
	if _, err := dci.Informer().AddEventHandler(on); err != nil {
		return nil, err
	}
	sinf, cinf, dcinf := si.Informer(), ci.Informer(), dci.Informer()
	return &kubeDRA{cs: h.ClientSet(), slices: si.Lister(), claims: ci.Lister(), classes: dci.Lister(),
		hasSynced: func() bool { return sinf.HasSynced() && cinf.HasSynced() && dcinf.HasSynced() }}, nil
}

func (k *kubeDRA) synced() bool { return k.hasSynced() }

func (k *kubeDRA) listSlices() ([]*resourceapi.ResourceSlice, error) {
	return k.slices.List(labels.Everything())
}

func (k *kubeDRA) listClaims() ([]*resourceapi.ResourceClaim, error) {
	return k.claims.List(labels.Everything())
}

func (k *kubeDRA) claim(ns, name string) (*resourceapi.ResourceClaim, error) {
	c, err := k.claims.ResourceClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return c, err
}

func (k *kubeDRA) class(name string) (*resourceapi.DeviceClass, error) {
	c, err := k.classes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return c, err
}

func (k *kubeDRA) fetch(ctx context.Context, ns, name string) (*resourceapi.ResourceClaim, error) {
	return k.cs.ResourceV1().ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{})
}

func (k *kubeDRA) update(ctx context.Context, c *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	return k.cs.ResourceV1().ResourceClaims(c.Namespace).Update(ctx, c, metav1.UpdateOptions{})
}

func (k *kubeDRA) updateStatus(ctx context.Context, c *resourceapi.ResourceClaim) (*resourceapi.ResourceClaim, error) {
	return k.cs.ResourceV1().ResourceClaims(c.Namespace).UpdateStatus(ctx, c, metav1.UpdateOptions{})
}
