//! The llmworker contract from Rust (tonic, code generated from proto/ by tonic-prost-build),
//! against a server with the demo tools.
//!
//! ```text
//! llmworker-polyglot --target HOST:PORT [--token TOKEN]
//!     [--ca CA.pem [--cert CLIENT.pem --key CLIENT.key]]
//! llmworker-polyglot --replicas HOST:PORT,HOST:PORT,...
//! ```
//!
//! Prints one "OK <check>" line per check; the first mismatch prints "FAIL <check>: <why>" and
//! exits 1. With --token every call carries it, and a call without it must be refused. With --ca
//! the channel is TLS (rustls), verified against that CA, and plaintext must be refused; with
//! --cert and --key it presents that client certificate, and a channel without it must be
//! refused. The deadline checks run only without --token and --ca. With
//! --replicas it sends 40 kv_set calls (keys balanced-0 to balanced-39) over every replica
//! with `Channel::balance_list`; the caller checks that each replica got some.

use std::error::Error as _;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Code, Request, Status};
use tonic_types::{RpcStatusExt, StatusExt};

pub mod llmworker {
    pub mod v1 {
        tonic::include_proto!("llmworker.v1");
    }
}

use llmworker::v1::tool_service_client::ToolServiceClient;
use llmworker::v1::{
    CallToolRequest, CallToolsRequest, ListDefinitionsSortedRequest, call_tool_event,
    call_tools_response,
};

/// A caller token (--auth-tokens) on every call of a client.
#[derive(Clone)]
struct Bearer(Option<MetadataValue<Ascii>>);

impl Interceptor for Bearer {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(token) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", token.clone());
        }
        Ok(request)
    }
}

type Client = ToolServiceClient<InterceptedService<Channel, Bearer>>;
type Outcome = Result<String, String>;

macro_rules! require {
    ($holds:expr, $($why:tt)+) => {
        if !$holds {
            return Err(format!($($why)+));
        }
    };
}

/// Whether a call failed on its deadline: DEADLINE_EXCEEDED from the server, or tonic's own
/// timer, which answers CANCELLED "Timeout expired" with a `tonic::TimeoutExpired` as source.
pub fn timed_out(status: &Status) -> bool {
    if status.code() == Code::DeadlineExceeded {
        return true;
    }
    let mut source = status.source();
    while let Some(error) = source {
        if error.is::<tonic::TimeoutExpired>() {
            return true;
        }
        source = error.source();
    }
    false
}

fn call(id: &str, name: &str, input_json: &str) -> CallToolRequest {
    CallToolRequest {
        call_id: id.to_owned(),
        name: name.to_owned(),
        input_json: input_json.to_owned(),
        ..Default::default()
    }
}

fn show(status: Status) -> String {
    format!("{:?}: {}", status.code(), status.message())
}

fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{prefix}-{nanos}")
}

/// Checks code, message and ErrorInfo (domain llmworker, reason, tool) of a failure.
fn expect_error(status: &Status, code: Code, reason: &str, tool: &str, message: &str) -> Outcome {
    require!(
        status.code() == code,
        "code {:?}, want {code:?}: {}",
        status.code(),
        status.message()
    );
    require!(
        status.message() == message,
        "message {:?}",
        status.message()
    );
    let info = status
        .get_details_error_info()
        .ok_or("no ErrorInfo in the status details")?;
    require!(
        info.domain == "llmworker" && info.reason == reason,
        "ErrorInfo {}/{}, want llmworker/{reason}",
        info.domain,
        info.reason
    );
    require!(
        info.metadata.get("tool").map(String::as_str) == Some(tool),
        "ErrorInfo metadata {:?}",
        info.metadata
    );
    Ok(format!("{code:?}, {reason}, tool={tool}"))
}

async fn list(client: &mut Client) -> Outcome {
    let listed = client
        .list_definitions_sorted(ListDefinitionsSortedRequest::default())
        .await
        .map_err(show)?
        .into_inner();
    let names: Vec<&str> = listed.definitions.iter().map(|d| d.name.as_str()).collect();
    require!(
        names.contains(&"echo") && names.is_sorted(),
        "names {names:?}"
    );
    let fingerprint = &listed.fingerprint;
    require!(
        fingerprint.len() == 64 && fingerprint.bytes().all(|b| b.is_ascii_hexdigit()),
        "fingerprint {fingerprint:?}"
    );
    let again = client
        .list_definitions_sorted(ListDefinitionsSortedRequest {
            known_fingerprint: fingerprint.clone(),
            ..Default::default()
        })
        .await
        .map_err(show)?
        .into_inner();
    require!(
        again.unchanged && again.definitions.is_empty(),
        "a known fingerprint answered unchanged={}",
        again.unchanged
    );
    Ok(format!(
        "{} tools, unchanged for a known fingerprint",
        names.len()
    ))
}

async fn echo(client: &mut Client) -> Outcome {
    let text = "from rust ✓";
    let input = format!("{{\"text\": \"{text}\"}}");
    let reply = client
        .call_tool(call("", "echo", &input))
        .await
        .map_err(show)?
        .into_inner();
    require!(reply.output == text, "output {:?}", reply.output);
    Ok(String::new())
}

async fn unknown_tool(client: &mut Client) -> Outcome {
    match client.call_tool(call("", "nope", "{}")).await {
        Ok(reply) => Err(format!("succeeded with {:?}", reply.into_inner().output)),
        Err(status) => expect_error(
            &status,
            Code::NotFound,
            "TOOL_NOT_FOUND",
            "nope",
            "Tool 'nope' not found",
        ),
    }
}

/// A countdown the server cancelled leaves "cancelled" under `countdown.<call id>`.
async fn cancelled(client: &mut Client, id: &str) -> Result<(), String> {
    let input = format!("{{\"key\": \"countdown.{id}\"}}");
    for _ in 0..100 {
        if let Ok(reply) = client.call_tool(call("", "kv_get", &input)).await
            && reply.get_ref().output == "cancelled"
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err("the countdown left no note: the tool ran on".to_owned())
}

/// `Request::set_timeout` sends `grpc-timeout` and also starts tonic's own timer of the same
/// length, which mostly ends a unary call first: CANCELLED "Timeout expired"; when the
/// server's deadline wins the race, DEADLINE_EXCEEDED. Either is a timeout to `timed_out`.
async fn deadline_request_timeout(client: &mut Client) -> Outcome {
    let id = unique("rust-timeout");
    let mut request = Request::new(call(&id, "countdown", r#"{"n": 100, "delay": 0.1}"#));
    request.set_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let status = match client.call_tool(request).await {
        Ok(_) => return Err("the countdown finished within 300 ms".to_owned()),
        Err(status) => status,
    };
    let millis = started.elapsed().as_millis();
    require!(
        (status.code() == Code::Cancelled && status.message() == "Timeout expired")
            || status.code() == Code::DeadlineExceeded,
        "{:?} {:?} after {millis} ms",
        status.code(),
        status.message()
    );
    require!(
        timed_out(&status),
        "timed_out() does not see it: {:?} {:?}, source {:?}",
        status.code(),
        status.message(),
        status.source()
    );
    require!(millis < 5000, "took {millis} ms");
    cancelled(client, &id).await?;
    Ok(format!(
        "{:?} {:?} after {millis} ms",
        status.code(),
        status.message()
    ))
}

/// `Endpoint::timeout` is tonic's timer alone (no `grpc-timeout`): CANCELLED too.
async fn deadline_endpoint_timeout(
    client: &mut Client,
    endpoint: &Endpoint,
    token: &Bearer,
) -> Outcome {
    let channel = endpoint
        .clone()
        .timeout(Duration::from_secs(1))
        .connect()
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let mut timed = ToolServiceClient::with_interceptor(channel, token.clone());
    let id = unique("rust-endpoint");
    let status = match timed
        .call_tool(call(&id, "countdown", r#"{"n": 100, "delay": 0.1}"#))
        .await
    {
        Ok(_) => return Err("the countdown finished within a second".to_owned()),
        Err(status) => status,
    };
    require!(
        status.code() == Code::Cancelled
            && status.message() == "Timeout expired"
            && timed_out(&status),
        "{:?} {:?}",
        status.code(),
        status.message()
    );
    cancelled(client, &id).await?;
    // The timer covers a call until its response headers: a stream runs on past it.
    let mut stream = timed
        .call_tool_stream(call("", "countdown", r#"{"n": 15, "delay": 0.1}"#))
        .await
        .map_err(show)?
        .into_inner();
    let started = Instant::now();
    let mut last = None;
    while let Some(event) = stream.message().await.map_err(show)? {
        last = event.event;
    }
    let millis = started.elapsed().as_millis();
    require!(
        matches!(last, Some(call_tool_event::Event::Result(_))) && millis > 1000,
        "the stream ended after {millis} ms with {last:?}"
    );
    Ok(format!(
        "{:?} {:?}; a stream ran {millis} ms under the 1 s timeout",
        status.code(),
        status.message()
    ))
}

/// Past the response headers tonic's timer is done, and the deadline `grpc-timeout` gave the
/// server ends a stream: DEADLINE_EXCEEDED.
async fn deadline_server(client: &mut Client) -> Outcome {
    let id = unique("rust-stream");
    let mut request = Request::new(call(&id, "countdown", r#"{"n": 100, "delay": 0.1}"#));
    request.set_timeout(Duration::from_secs(1));
    let started = Instant::now();
    let mut stream = client
        .call_tool_stream(request)
        .await
        .map_err(show)?
        .into_inner();
    let mut events = 0;
    let status = loop {
        match stream.message().await {
            Ok(Some(_)) => events += 1,
            Ok(None) => return Err(format!("the stream ended after {events} events, no error")),
            Err(status) => break status,
        }
    };
    let millis = started.elapsed().as_millis();
    require!(
        status.code() == Code::DeadlineExceeded && events > 0,
        "{:?} {:?} after {events} events and {millis} ms",
        status.code(),
        status.message()
    );
    require!(millis < 5000, "took {millis} ms");
    cancelled(client, &id).await?;
    Ok(format!(
        "{:?} {:?} after {events} events",
        status.code(),
        status.message()
    ))
}

async fn batch(client: &mut Client) -> Outcome {
    let response = client
        .call_tools(CallToolsRequest {
            calls: vec![
                call("ok", "echo", r#"{"text": "batched"}"#),
                call("missing", "nope", "{}"),
                call("bad", "echo", "[]"),
            ],
        })
        .await
        .map_err(show)?
        .into_inner();
    let Some(call_tools_response::Outcome::Completed(completed)) = response.outcome else {
        return Err(format!("outcome {:?}", response.outcome));
    };
    let results = &completed.results;
    require!(results.len() == 3, "{} results", results.len());
    let ok = &results[0];
    require!(
        ok.call_id == "ok" && !ok.is_error && ok.output == "batched",
        "first result {ok:?}"
    );
    // CallResult.error is a tonic_types::pb::Status (extern_path), so RpcStatusExt reads it.
    let missing: &tonic_types::pb::Status = results[1].error.as_ref().ok_or("no error")?;
    let info = missing.get_details_error_info();
    require!(
        results[1].is_error
            && Code::from(missing.code) == Code::NotFound
            && info.is_some_and(|info| info.reason == "TOOL_NOT_FOUND"),
        "second result {:?}",
        results[1]
    );
    let bad = results[2].error.as_ref().ok_or("no error")?;
    require!(
        Code::from(bad.code) == Code::InvalidArgument
            && bad
                .get_details_error_info()
                .is_some_and(|info| info.reason == "TOOL_INVALID_ARGUMENT"),
        "third result {:?}",
        results[2]
    );
    Ok("ok, TOOL_NOT_FOUND, TOOL_INVALID_ARGUMENT".to_owned())
}

async fn refused_without_token(endpoint: &Endpoint) -> Outcome {
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let mut anonymous = ToolServiceClient::with_interceptor(channel, Bearer(None));
    let status = match anonymous
        .call_tool(call("", "echo", r#"{"text": "x"}"#))
        .await
    {
        Ok(_) => return Err("a call without a token succeeded".to_owned()),
        Err(status) => status,
    };
    let reason = status.get_details_error_info().map(|info| info.reason);
    require!(
        status.code() == Code::Unauthenticated && reason.as_deref() == Some("UNAUTHENTICATED"),
        "without a token: {:?} {reason:?}",
        status.code()
    );
    Ok(String::new())
}

async fn balance(replicas: &str) -> Outcome {
    let endpoints = replicas
        .split(',')
        .map(|target| Endpoint::from_shared(format!("http://{target}")))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("bad replica: {e}"))?;
    let count = endpoints.len();
    let channel = Channel::balance_list(endpoints.into_iter());
    let mut client = ToolServiceClient::new(channel);
    for i in 0..40 {
        let input = format!("{{\"key\": \"balanced-{i}\", \"value\": \"rust\"}}");
        let reply = client
            .call_tool(call("", "kv_set", &input))
            .await
            .map_err(show)?;
        require!(
            reply.get_ref().output == "ok",
            "kv_set answered {:?}",
            reply.get_ref().output
        );
    }
    Ok(format!("40 calls over {count} replicas"))
}

/// A call that must fail: a connection refused, or a call failing on it.
async fn refused(endpoint: Endpoint) -> Outcome {
    let channel = match endpoint.connect().await {
        Ok(channel) => channel,
        Err(error) => return Ok(format!("connect: {error}")),
    };
    match ToolServiceClient::new(channel)
        .call_tool(call("", "echo", r#"{"text": "x"}"#))
        .await
    {
        Ok(_) => Err("the call succeeded".to_owned()),
        Err(status) => Ok(format!("{:?}", status.code())),
    }
}

/// A TLS channel verifying the server but presenting no client certificate must be refused.
async fn refused_without_certificate(target: &str, ca: &str) -> Outcome {
    let tls = tls_config(ca, None)?;
    let endpoint = Endpoint::from_shared(format!("https://{target}"))
        .and_then(|endpoint| endpoint.tls_config(tls))
        .map_err(|e| e.to_string())?;
    refused(endpoint).await
}

fn tls_config(ca: &str, pair: Option<(&str, &str)>) -> Result<ClientTlsConfig, String> {
    let read = |path: &str| std::fs::read(path).map_err(|e| format!("{path}: {e}"));
    let mut tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(read(ca)?));
    if let Some((cert, key)) = pair {
        tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
    }
    Ok(tls)
}

fn report(name: &str, outcome: Outcome) -> bool {
    match outcome {
        Ok(detail) if detail.is_empty() => println!("OK {name}"),
        Ok(detail) => println!("OK {name} ({detail})"),
        Err(why) => {
            println!("FAIL {name}: {why}");
            return false;
        }
    }
    true
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: llmworker-polyglot --target HOST:PORT [--token TOKEN] \
        [--ca CA.pem [--cert CLIENT.pem --key CLIENT.key]] | --replicas A,B";
    let (mut target, mut token, mut replicas) = (None, None, None);
    let (mut ca, mut cert, mut key) = (None, None, None);
    for pair in args.chunks(2) {
        match (pair[0].as_str(), pair.get(1)) {
            ("--target", Some(value)) => target = Some(value.clone()),
            ("--token", Some(value)) => token = Some(value.clone()),
            ("--replicas", Some(value)) => replicas = Some(value.clone()),
            ("--ca", Some(value)) => ca = Some(value.clone()),
            ("--cert", Some(value)) => cert = Some(value.clone()),
            ("--key", Some(value)) => key = Some(value.clone()),
            _ => {
                eprintln!("{usage}");
                return ExitCode::from(2);
            }
        }
    }
    if let Some(replicas) = replicas {
        let ok = report(
            "balance: Channel::balance_list spreads calls over the replicas",
            balance(&replicas).await,
        );
        return if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let Some(target) = target else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let bearer = match token
        .as_deref()
        .map(|t| format!("Bearer {t}").parse())
        .transpose()
    {
        Ok(value) => Bearer(value),
        Err(_) => {
            eprintln!("the token must be printable ASCII");
            return ExitCode::from(2);
        }
    };
    let pair = match (&cert, &key) {
        (Some(cert), Some(key)) if ca.is_some() => Some((cert.as_str(), key.as_str())),
        (None, None) => None,
        _ => {
            eprintln!("{usage}");
            return ExitCode::from(2);
        }
    };
    let Ok(plaintext) = Endpoint::from_shared(format!("http://{target}")) else {
        eprintln!("bad target {target}");
        return ExitCode::from(2);
    };
    let endpoint = match &ca {
        None => plaintext.clone(),
        Some(ca) => {
            let configured = tls_config(ca, pair).and_then(|tls| {
                Endpoint::from_shared(format!("https://{target}"))
                    .and_then(|endpoint| endpoint.tls_config(tls))
                    .map_err(|e| e.to_string())
            });
            match configured {
                Ok(endpoint) => endpoint,
                Err(error) => {
                    eprintln!("TLS: {error}");
                    return ExitCode::from(2);
                }
            }
        }
    };
    let channel = match endpoint.connect().await {
        Ok(channel) => channel,
        Err(error) => {
            println!("FAIL connect: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut client = ToolServiceClient::with_interceptor(channel, bearer.clone());

    let ok = report("list sorted definitions", list(&mut client).await)
        && report("call echo", echo(&mut client).await)
        && report(
            "unknown tool: ErrorInfo from StatusExt",
            unknown_tool(&mut client).await,
        )
        && report(
            "batch: a result and a per-call tonic_types::pb::Status",
            batch(&mut client).await,
        )
        && (token.is_some()
            || ca.is_some()
            || (report(
                "deadline: Request::set_timeout answers CANCELLED \"Timeout expired\" (or the server's DEADLINE_EXCEEDED)",
                deadline_request_timeout(&mut client).await,
            ) && report(
                "deadline: Endpoint::timeout answers CANCELLED \"Timeout expired\"",
                deadline_endpoint_timeout(&mut client, &endpoint, &bearer).await,
            ) && report(
                "deadline: the server's grpc-timeout deadline answers DEADLINE_EXCEEDED",
                deadline_server(&mut client).await,
            )))
        && (token.is_none()
            || report(
                "token: every call carries it, a call without it is UNAUTHENTICATED",
                refused_without_token(&endpoint).await,
            ))
        && (ca.is_none()
            || report(
                "tls: verified against the CA, plaintext refused",
                refused(plaintext).await,
            ))
        && (pair.is_none()
            || report(
                "mutual tls: a channel without the client certificate refused",
                refused_without_certificate(&target, ca.as_deref().unwrap_or_default()).await,
            ));
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
