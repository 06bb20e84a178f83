// Runs llmworker's Python demo server for the SDK's tests: the repository's Python
// ($LLMWORKER_PYTHON, default the .venv that make builds).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import path from "node:path";

const repository = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

/** Start the demo server with args; resolves to {address, stop} once it serves. */
export function startServer(args = [], env = {}) {
  const python = process.env.LLMWORKER_PYTHON ?? path.join(repository, ".venv/bin/python");
  const child = spawn(python, ["-m", "llmworker_server", "--demo", "--port", "0", "--state", "memory", ...args], {
    cwd: repository,
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  return new Promise((resolve, reject) => {
    const seen = [];
    const lines = createInterface({ input: child.stderr });
    const timer = setTimeout(() => reject(new Error(`the server did not start:\n${seen.join("\n")}`)), 30000);
    lines.on("line", (line) => {
      seen.push(line);
      const found = line.split(" tools on ")[1];
      if (found) {
        clearTimeout(timer);
        const stop = () => new Promise((done) => { child.once("exit", done); child.kill("SIGINT"); });
        resolve({ address: found.split(" ")[0], stop });
      }
    });
    child.once("exit", (code) => reject(new Error(`the server exited with ${code}:\n${seen.join("\n")}`)));
  });
}
