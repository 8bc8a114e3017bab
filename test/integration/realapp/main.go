// Command realapp is the image of the real-node tests of real-app kinds (real-apps-node.test.ts): it
// shows from inside the container what a kind's settings did. GET / answers the -greeting flag (args
// take effect), /env/NAME the variable's value (env from a Secret reaches the process), /write?dir=D
// whether a file can be written in D (a writable volume under a read-only root), /ready 200 unless
// -ready=false (a failing readiness probe), /healthz always 200.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
)

func main() {
	port := flag.Int("port", 8080, "port to listen on")
	greeting := flag.String("greeting", "hello", "what GET / answers")
	ready := flag.Bool("ready", true, "whether GET /ready answers 200 (false: 503)")
	flag.Parse()

	http.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, *greeting) })
	http.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	http.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		if !*ready {
			http.Error(w, "not ready (-ready=false)", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	http.HandleFunc("GET /env/{name}", func(w http.ResponseWriter, r *http.Request) {
		value, ok := os.LookupEnv(r.PathValue("name"))
		if !ok {
			http.Error(w, "unset", http.StatusNotFound)
			return
		}
		fmt.Fprint(w, value)
	})
	http.HandleFunc("GET /write", func(w http.ResponseWriter, r *http.Request) {
		file := filepath.Join(r.URL.Query().Get("dir"), "realapp-write-test")
		if err := os.WriteFile(file, []byte("written\n"), 0o644); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "wrote", file)
	})
	log.Printf("realapp: listening on :%d, args %q", *port, os.Args[1:])
	log.Fatal(http.ListenAndServe(fmt.Sprintf(":%d", *port), nil))
}
