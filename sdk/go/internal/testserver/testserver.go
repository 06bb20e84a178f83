// Package testserver runs llmworker's Python demo server for the SDK's tests: the
// repository's Python ($LLMWORKER_PYTHON, default the .venv that make builds).
package testserver

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Server is a running demo server and the public address it serves on.
type Server struct {
	Address string
	command *exec.Cmd
}

// Start runs `python -m llmworker_server --demo --port 0 --state memory arguments…` with env
// added to the environment, once it says where it serves.
func Start(arguments []string, env ...string) (*Server, error) {
	_, here, _, _ := runtime.Caller(0)
	repository := filepath.Join(filepath.Dir(here), "..", "..", "..", "..")
	python := os.Getenv("LLMWORKER_PYTHON")
	if python == "" {
		python = filepath.Join(repository, ".venv", "bin", "python")
	}
	command := exec.Command(python, append([]string{"-m", "llmworker_server", "--demo",
		"--port", "0", "--state", "memory"}, arguments...)...)
	command.Dir = repository
	command.Env = append(os.Environ(), env...)
	log, err := command.StderrPipe()
	if err == nil {
		err = command.Start()
	}
	if err != nil {
		return nil, fmt.Errorf("start the llmworker server (run make first): %w", err)
	}
	started := &Server{command: command}
	lines := bufio.NewScanner(log)
	var seen []string
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if _, address, found := strings.Cut(lines.Text(), " tools on "); found {
			started.Address, _, _ = strings.Cut(address, " ")
			break
		}
	}
	go func() {
		for lines.Scan() { // keep draining the log: a full pipe would block the server
		}
	}()
	if started.Address == "" {
		started.Stop()
		return nil, fmt.Errorf("the llmworker server did not say where it serves:\n%s", strings.Join(seen, "\n"))
	}
	return started, nil
}

// Stop stops the server (SIGINT: a graceful stop) and waits for it.
func (s *Server) Stop() {
	if s.command.ProcessState == nil {
		_ = s.command.Process.Signal(os.Interrupt)
		_ = s.command.Wait()
	}
}
