// Checks TLS from Node.js through @llmworker/sdk (its ca, cert and key options) against a server
// with TLS (or mTLS) on:
// node tls.mjs HOST:PORT CA_FILE [CERT_FILE KEY_FILE] [--expect ok|refused|plaintext-refused]
// The server's certificate is verified against CA_FILE for HOST; CERT_FILE/KEY_FILE are
// presented when given. ok (the default): the listing has echo and echo answers. refused (a
// client certificate missing or from another CA, for a server requiring one): the handshake
// fails, so the listing fails UNAVAILABLE, though HOST:PORT accepts TCP connections.
// plaintext-refused: the same for a plaintext connection to the TLS port (CA_FILE may be left
// out). Prints "OK tls <check>" per check; a mismatch prints "FAIL tls <check>: <why>" and
// exits 1; bad arguments exit 2.
import fs from "node:fs";
import net from "node:net";
import { LlmworkerError, createClient } from "@llmworker/sdk";
import { failer, failure, rejection, show } from "./contract.mjs";

const USAGE = "usage: node tls.mjs HOST:PORT CA_FILE [CERT_FILE KEY_FILE] [--expect ok|refused|plaintext-refused]";

function usage(why) {
  console.error(why ? `${USAGE}\n${why}` : USAGE);
  process.exit(2);
}

const args = process.argv.slice(2);
let expect = "ok";
const flag = args.indexOf("--expect");
if (flag >= 0) [, expect] = args.splice(flag, 2);
if (!["ok", "refused", "plaintext-refused"].includes(expect)) usage(`--expect ${expect}: use ok, refused or plaintext-refused`);
const [target, caFile, certFile, keyFile, ...extra] = args;
if (!target || extra.length) usage();
if (!caFile && expect !== "plaintext-refused") usage(`CA_FILE is required with --expect ${expect}`);
if ((certFile === undefined) !== (keyFile === undefined)) usage("CERT_FILE and KEY_FILE go together");

function read(file) {
  try {
    return fs.readFileSync(file);
  } catch (error) {
    return usage(`${file}: ${error.message}`);
  }
}

// The client's TLS options: none for plaintext-refused; the CA, and the pair when given.
function tlsOptions() {
  if (expect === "plaintext-refused") return {};
  return { ca: read(caFile), ...(certFile ? { cert: read(certFile), key: read(keyFile) } : {}) };
}

const fail = failer("tls ");
let client;
try {
  client = createClient(target, { ...tlsOptions(), timeoutMs: 20000 });
} catch (error) {
  usage(`${caFile}, ${certFile ?? "no CERT_FILE"}: ${error.message}`);
}

if (expect === "ok") {
  // 1. The listing, over TLS, has echo.
  let listed = null;
  try {
    listed = await client.listDefinitions();
  } catch (error) {
    fail("listing", failure(error));
  }
  const names = listed.tools.map((d) => d.name);
  if (!names.includes("echo")) fail("listing", `names ${show(names)}, want echo among them`);
  console.log("OK tls listing");

  // 2. echo answers over TLS.
  let reply = null;
  try {
    reply = await client.callTool("echo", { text: "over tls" });
  } catch (error) {
    fail("call echo", failure(error));
  }
  if (reply.output !== "over tls") fail("call echo", `output ${show(reply.output)}, want "over tls"`);
  console.log("OK tls call echo");
} else {
  // The handshake fails (a client certificate missing or from another CA, or plaintext to the
  // TLS port): the listing fails UNAVAILABLE. A target that refuses TCP would fail so too, so
  // the target must first accept a TCP connection: the refusal is the handshake's.
  const check = expect === "refused" ? "refused" : "plaintext refused";
  const colon = target.lastIndexOf(":");
  const host = target.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
  const port = Number(target.slice(colon + 1));
  const unreachable = await new Promise((resolve) => {
    const probe = net.connect({ host, port }, () => {
      probe.destroy();
      resolve(null);
    });
    probe.setTimeout(20000, () => probe.destroy(new Error("timed out")));
    probe.on("error", (error) => resolve(error));
  });
  if (unreachable) fail(check, `nothing accepts connections on ${target}: ${unreachable.message}`);
  const error = await rejection(client.listDefinitions());
  if (!error) fail(check, "the server accepted the connection");
  if (!(error instanceof LlmworkerError) || error.codeName !== "UNAVAILABLE" || error.reason !== "") fail(check, `${failure(error)}, want UNAVAILABLE`);
  console.log(`OK tls ${check}: ${error.codeName}`);
}
client.close();
