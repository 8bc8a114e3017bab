// Command echo is the walkthrough's app on the real node: a local stand-in for the sample kind's image
// (takeyan/flask:0.0.3, which no registry can serve here). GET /api/echo?... answers with the JSON
// fields of the original walkthrough; the pod facts come from the Downward API env (POD_NAME, POD_IP,
// NODE_NAME), else from the hostname and the first non-loopback address. GET /api/burn?ms=N spins the
// CPU for N ms (at most 1000) and then answers: load for a HorizontalPodAutoscaler (docs/autoscaling.md).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

type echo struct {
	API         string `json:"api"`
	NodeName    string `json:"nodename"`
	PodIP       string `json:"pod_ip"`
	PodName     string `json:"podname"`
	QueryString string `json:"query_string"`
	Timestamp   string `json:"timestamp"`
}

func firstNonLoopbackIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, addr := range addrs {
		if ipnet, ok := addr.(*net.IPNet); ok && !ipnet.IP.IsLoopback() && ipnet.IP.To4() != nil {
			return ipnet.IP.String()
		}
	}
	return ""
}

func envOr(name string, fallback func() string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback()
}

func hostname() string {
	name, _ := os.Hostname()
	return name
}

func main() {
	podName := envOr("POD_NAME", hostname)
	podIP := envOr("POD_IP", firstNonLoopbackIP)
	nodeName := envOr("NODE_NAME", hostname)
	port := envOr("PORT", func() string { return "5000" })

	http.HandleFunc("GET /api/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(echo{
			API:         r.URL.Path,
			NodeName:    nodeName,
			PodIP:       podIP,
			PodName:     podName,
			QueryString: r.URL.RawQuery,
			Timestamp:   time.Now().UTC().Format(time.RFC3339Nano),
		})
	})
	http.HandleFunc("GET /api/burn", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
		if err != nil || ms < 0 || ms > 1000 {
			http.Error(w, "ms must be an integer from 0 to 1000\n", http.StatusBadRequest)
			return
		}
		end := time.Now().Add(time.Duration(ms) * time.Millisecond)
		spins := 0
		for time.Now().Before(end) {
			spins++
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"podname": podName, "ms": ms, "spins": spins})
	})
	http.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	// As a container's PID 1 the process gets no default action for SIGTERM: without this handler a
	// pod would wait out its whole termination grace period.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	server := &http.Server{Addr: ":" + port, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	log.Printf("echo: a local stand-in for takeyan/flask:0.0.3, listening on :%s (pod %s, %s, node %s)", port, podName, podIP, nodeName)
	if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
