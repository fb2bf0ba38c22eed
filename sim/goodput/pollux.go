package goodput

// PolluxSource says where Pollux's parameters come from.
const PolluxSource = "fitted to the step times Pollux's artifact measured per placement " +
	"(github.com/petuum/adaptdl, osdi21-artifact, commit de25dcc, simulator/traces/MODEL/placements.csv and scalability.csv): " +
	"ordinary least squares with γ = 1 — AlphaC, BetaC on the 1-GPU rows; AlphaHost, BetaHost on the residual step time of the one-node rows " +
	"against replicas − 2; AlphaNet, BetaNet on the multi-node rows; Batch the global batch of the artifact's workloads for jobs of up to 8 GPUs " +
	"(simulator/workloads/workload-1.csv); MaxLocal the largest local batch measured (yolov3: its max_local_bsz, 8). " +
	"CrossSwitch 1.5 is an assumption: Pollux's testbed has one switch level"

// Pollux returns a throughput model for the six job types of Pollux's
// evaluation (Qiao et al., OSDI'21; its artifact's benchmark/models:
// cifar10, imagenet, bert, yolov3, deepspeech2, ncf), with parameters fitted to
// the step times its artifact measured (see PolluxSource; docs/research-policies.md
// lists them). A job of no or another type is an imagenet job. Each
// call returns a new Model.
func Pollux() *Model {
	return &Model{
		Default:     "imagenet",
		CrossSwitch: 1.5,
		Types: map[string]Params{
			"cifar10":  {Batch: 2048, MaxLocal: 1024, AlphaC: 0.0178, BetaC: 0.000664, AlphaHost: 0.0313, BetaHost: 0, AlphaNet: 0.0643, BetaNet: 0.00217},
			"imagenet": {Batch: 3200, MaxLocal: 200, AlphaC: 0.0797, BetaC: 0.00421, AlphaHost: 0.00512, BetaHost: 0.0139, AlphaNet: 0.0926, BetaNet: 0.00425},
			// BERT fine-tuned on SQuAD (run_squad.py).
			"bert": {Batch: 384, MaxLocal: 12, AlphaC: 0.227, BetaC: 0.0578, AlphaHost: 0.0126, BetaHost: 0.0194, AlphaNet: 0.873, BetaNet: 0.00795},
			// YOLOv3 on PASCAL VOC.
			"yolov3":      {Batch: 64, MaxLocal: 8, AlphaC: 0.219, BetaC: 0.0243, AlphaHost: 0.0309, BetaHost: 0.0679, AlphaNet: 0.677, BetaNet: 0.00922},
			"deepspeech2": {Batch: 320, MaxLocal: 80, AlphaC: 0.0928, BetaC: 0.0291, AlphaHost: 0.0721, BetaHost: 0.0310, AlphaNet: 0.296, BetaNet: 0.00971},
			// Neural collaborative filtering: a fixed cost per pass dominates
			// its compute, so more GPUs gain little.
			"ncf": {Batch: 32768, MaxLocal: 32768, AlphaC: 0.00765, BetaC: 4.34e-7, AlphaHost: 0.00353, BetaHost: 0.000879, AlphaNet: 0.0138, BetaNet: 0.000603},
		},
	}
}
