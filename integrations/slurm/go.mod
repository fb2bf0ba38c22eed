module github.com/gpusched/gpusched/integrations/slurm

go 1.26

require github.com/gpusched/gpusched v0.0.0-00010101000000-000000000000

require (
	github.com/google/btree v1.1.3 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/gpusched/gpusched => ../..
