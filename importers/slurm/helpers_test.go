package slurm_test

import (
	"io"

	"gopkg.in/yaml.v3"
)

func encodeYAML(w io.Writer, v any) error {
	e := yaml.NewEncoder(w)
	if err := e.Encode(v); err != nil {
		return err
	}
	return e.Close()
}
