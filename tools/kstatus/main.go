// Prints what kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status) computes for Kubernetes objects, as
// Helm 4's --wait, Flux's health checks and kpt compute it: reads a stream of JSON objects on stdin
// (an API server's answer as it is: a create's, a get's) and writes one JSON line per object,
// {"status": "InProgress"|"Current"|"Failed"|..., "message": "..."}.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type result struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	out := json.NewEncoder(os.Stdout)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return
		} else if err != nil {
			fmt.Fprintf(os.Stderr, "kstatus: stdin is not a stream of JSON objects: %v\n", err)
			os.Exit(2)
		}
		// Integers as int64, as client-go decodes them (kstatus reads metadata.generation as one).
		var obj map[string]interface{}
		if err := utiljson.Unmarshal(raw, &obj); err != nil {
			fmt.Fprintf(os.Stderr, "kstatus: %v\n", err)
			os.Exit(2)
		}
		res, err := status.Compute(&unstructured.Unstructured{Object: obj})
		if err != nil {
			fmt.Fprintf(os.Stderr, "kstatus: %v\n", err)
			os.Exit(1)
		}
		if err := out.Encode(result{Status: res.Status.String(), Message: res.Message}); err != nil {
			os.Exit(1)
		}
	}
}
