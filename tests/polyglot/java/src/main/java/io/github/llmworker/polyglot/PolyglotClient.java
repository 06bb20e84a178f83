package io.github.llmworker.polyglot;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import io.github.llmworker.v1.CallResult;
import io.github.llmworker.v1.CallToolRequest;
import io.github.llmworker.v1.CallToolsRequest;
import io.github.llmworker.v1.CallToolsResponse;
import io.github.llmworker.v1.ListDefinitionsSortedRequest;
import io.github.llmworker.v1.ListDefinitionsSortedResponse;
import io.github.llmworker.v1.ToolDefinition;
import io.github.llmworker.v1.ToolServiceGrpc;
import io.grpc.ChannelCredentials;
import io.grpc.ClientInterceptor;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.MetadataUtils;
import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The llmworker contract from Java (grpc-java, code generated from proto/), against a server
 * with the demo tools.
 *
 * <pre>
 * java -jar target/llmworker-polyglot.jar --target HOST:PORT [--token TOKEN]
 *     [--ca CA.pem [--cert CLIENT.pem --key CLIENT.key]]
 * </pre>
 *
 * <p>Prints one "OK &lt;check&gt;" line per check; the first mismatch prints "FAIL &lt;check&gt;:
 * &lt;why&gt;" and exits 1. With --token every call carries it, and a call without it must be
 * refused; with --ca the channel is TLS, verified against that CA, and plaintext must be refused;
 * with --cert and --key it presents that client certificate (mutual TLS), and a channel without
 * one must be refused.
 */
public final class PolyglotClient {
  private static final String SERVICE = "llmworker.v1.ToolService";

  private PolyglotClient() {}

  /** A check's expectation that did not hold. */
  private static final class Mismatch extends RuntimeException {
    Mismatch(String why) {
      super(why);
    }
  }

  @FunctionalInterface
  private interface Check {
    /** Runs the check; returns a detail for the OK line. */
    String run() throws Exception;
  }

  private static void require(boolean holds, String why) {
    if (!holds) {
      throw new Mismatch(why);
    }
  }

  private static void check(String name, Check body) {
    String detail;
    try {
      detail = body.run();
    } catch (Mismatch mismatch) {
      System.out.println("FAIL " + name + ": " + mismatch.getMessage());
      System.exit(1);
      return;
    } catch (Exception error) {
      System.out.println("FAIL " + name + ": " + error);
      System.exit(1);
      return;
    }
    System.out.println("OK " + name + (detail.isEmpty() ? "" : " (" + detail + ")"));
  }

  /**
   * The service config of docs/replicas.md: round_robin over every address, a replica whose
   * health is not SERVING left out, and (with {@code retry}) UNAVAILABLE retried on another
   * replica: use that channel only for tools annotated read-only or idempotent.
   */
  static Map<String, Object> serviceConfig(String healthService, boolean retry) {
    Map<String, Object> balanced =
        Map.of(
            "loadBalancingConfig", List.of(Map.of("round_robin", Map.of())),
            "healthCheckConfig", Map.of("serviceName", healthService));
    if (!retry) {
      return balanced;
    }
    Map<String, Object> retrying = new HashMap<>(balanced);
    retrying.put(
        "methodConfig",
        List.of(
            Map.of(
                "name", List.of(Map.of("service", SERVICE)),
                "retryPolicy",
                Map.of(
                    "maxAttempts", 5.0, // JSON numbers are doubles
                    "initialBackoff", "0.05s",
                    "maxBackoff", "1s",
                    "backoffMultiplier", 2.0,
                    "retryableStatusCodes", List.of("UNAVAILABLE")))));
    return retrying;
  }

  /** A caller token (--auth-tokens) on every call of a channel. */
  static ClientInterceptor bearer(String token) {
    Metadata headers = new Metadata();
    headers.put(
        Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + token);
    return MetadataUtils.newAttachHeadersInterceptor(headers);
  }

  static ManagedChannel channel(
      String target, ChannelCredentials credentials, Map<String, ?> config, String token) {
    var builder = Grpc.newChannelBuilder(target, credentials).defaultServiceConfig(config);
    if (config.containsKey("methodConfig")) {
      builder.enableRetry();
    }
    if (token != null) {
      builder.intercept(bearer(token));
    }
    return builder.build();
  }

  /** The ErrorInfo detail of a google.rpc.Status, or null. */
  static ErrorInfo errorInfo(com.google.rpc.Status status) throws InvalidProtocolBufferException {
    if (status == null) {
      return null;
    }
    for (Any detail : status.getDetailsList()) {
      if (detail.is(ErrorInfo.class)) {
        return detail.unpack(ErrorInfo.class);
      }
    }
    return null;
  }

  private static String jarOf(Class<?> type) {
    return type.getProtectionDomain().getCodeSource().getLocation().getPath();
  }

  private static CallToolRequest call(String id, String name, String inputJson) {
    return CallToolRequest.newBuilder()
        .setCallId(id)
        .setName(name)
        .setInputJson(inputJson)
        .build();
  }

  /** The failure a call must end with: its status, or a Mismatch when it succeeded. */
  /** An echo on channel fails UNAVAILABLE (the handshake refused it); channel is then shut down. */
  private static String refused(ManagedChannel channel, String what) throws Exception {
    try {
      StatusRuntimeException error =
          failure(
              () ->
                  ToolServiceGrpc.newBlockingStub(channel)
                      .withDeadlineAfter(10, TimeUnit.SECONDS)
                      .callTool(call("", "echo", "{\"text\": \"x\"}"))
                      .getOutput());
      require(
          error.getStatus().getCode() == Status.Code.UNAVAILABLE,
          what + " answered " + error.getStatus());
    } finally {
      channel.shutdownNow();
    }
    return "";
  }

  private static StatusRuntimeException failure(Check call) throws Exception {
    try {
      String answer = call.run();
      throw new Mismatch("succeeded with " + answer);
    } catch (StatusRuntimeException error) {
      return error;
    }
  }

  /** Checks code, message and ErrorInfo (domain llmworker, reason, tool) of a failure. */
  private static String expectError(
      StatusRuntimeException error, Status.Code code, String reason, String tool, String message)
      throws InvalidProtocolBufferException {
    require(
        error.getStatus().getCode() == code,
        "code " + error.getStatus().getCode() + ", want " + code + ": " + error.getMessage());
    com.google.rpc.Status status = StatusProto.fromThrowable(error);
    require(status != null, "no google.rpc.Status (grpc-status-details-bin) in the trailers");
    require(status.getMessage().equals(message), "message '" + status.getMessage() + "'");
    ErrorInfo info = errorInfo(status);
    require(info != null, "no ErrorInfo in the status details");
    require(
        info.getDomain().equals("llmworker") && info.getReason().equals(reason),
        "ErrorInfo " + info.getDomain() + "/" + info.getReason() + ", want llmworker/" + reason);
    require(
        tool.equals(info.getMetadataMap().get("tool")),
        "ErrorInfo metadata " + info.getMetadataMap());
    return code + ", " + reason + ", tool=" + tool;
  }

  public static void main(String[] args) throws Exception {
    String target = null;
    String token = null;
    String ca = null;
    String cert = null;
    String key = null;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--target" -> target = args[i + 1];
        case "--token" -> token = args[i + 1];
        case "--ca" -> ca = args[i + 1];
        case "--cert" -> cert = args[i + 1];
        case "--key" -> key = args[i + 1];
        default -> {
          System.err.println("unknown option " + args[i]);
          System.exit(2);
        }
      }
    }
    if (target == null || args.length % 2 != 0 || (cert == null) != (key == null)
        || (cert != null && ca == null)) {
      System.err.println(
          "usage: PolyglotClient --target HOST:PORT [--token TOKEN]"
              + " [--ca CA.pem [--cert CLIENT.pem --key CLIENT.key]]");
      System.exit(2);
    }
    ChannelCredentials credentials = InsecureChannelCredentials.create();
    if (ca != null) {
      var tls = TlsChannelCredentials.newBuilder().trustManager(new File(ca));
      if (cert != null) {
        tls.keyManager(new File(cert), new File(key)); // a PKCS#8 PEM key
      }
      credentials = tls.build();
    }
    ManagedChannel plain = channel(target, credentials, serviceConfig(SERVICE, false), token);
    ManagedChannel retrying = channel(target, credentials, serviceConfig(SERVICE, true), token);
    try {
      run(target, credentials, plain, retrying, token, ca, cert != null);
    } finally {
      plain.shutdownNow();
      retrying.shutdownNow();
    }
  }

  private static void run(
      String target,
      ChannelCredentials credentials,
      ManagedChannel plain,
      ManagedChannel retrying,
      String token,
      String ca,
      boolean mutual)
      throws IOException, InterruptedException {
    ToolServiceGrpc.ToolServiceBlockingStub stub =
        ToolServiceGrpc.newBlockingStub(plain).withDeadlineAfter(20, TimeUnit.SECONDS);

    check(
        "google.rpc.Status from proto-google-common-protos",
        () -> {
          String status = jarOf(com.google.rpc.Status.class);
          String info = jarOf(ErrorInfo.class);
          require(
              status.contains("proto-google-common-protos") && status.equals(info),
              "com.google.rpc.Status comes from " + status + ", ErrorInfo from " + info
                  + ": generate llmworker/v1/*.proto only");
          return status.substring(status.lastIndexOf('/') + 1);
        });

    check(
        "list sorted definitions",
        () -> {
          ListDefinitionsSortedResponse listed =
              stub.listDefinitionsSorted(ListDefinitionsSortedRequest.getDefaultInstance());
          List<String> names = new ArrayList<>();
          for (ToolDefinition definition : listed.getDefinitionsList()) {
            names.add(definition.getName());
          }
          List<String> sorted = new ArrayList<>(names);
          sorted.sort(null);
          require(names.contains("echo") && names.equals(sorted), "names " + names);
          require(
              listed.getFingerprint().matches("[0-9a-f]{64}"),
              "fingerprint '" + listed.getFingerprint() + "'");
          ListDefinitionsSortedResponse again =
              stub.listDefinitionsSorted(
                  ListDefinitionsSortedRequest.newBuilder()
                      .setKnownFingerprint(listed.getFingerprint())
                      .build());
          require(
              again.getUnchanged() && again.getDefinitionsCount() == 0,
              "a known fingerprint answered unchanged=" + again.getUnchanged());
          return names.size() + " tools, unchanged for a known fingerprint";
        });

    check(
        "call echo",
        () -> {
          String text = "from java ✓";
          String output =
              stub.callTool(call("", "echo", "{\"text\": \"" + text + "\"}")).getOutput();
          require(output.equals(text), "output '" + output + "'");
          return "";
        });

    check(
        "unknown tool: ErrorInfo from StatusProto.fromThrowable",
        () ->
            expectError(
                failure(() -> stub.callTool(call("", "nope", "{}")).getOutput()),
                Status.Code.NOT_FOUND,
                "TOOL_NOT_FOUND",
                "nope",
                "Tool 'nope' not found"));

    check(
        "deadline: DEADLINE_EXCEEDED, and the tool cancelled",
        () -> {
          String id = "java-deadline-" + System.nanoTime();
          long started = System.nanoTime();
          StatusRuntimeException error =
              failure(
                  () ->
                      stub.withDeadlineAfter(300, TimeUnit.MILLISECONDS)
                          .callTool(call(id, "countdown", "{\"n\": 100, \"delay\": 0.1}"))
                          .getOutput());
          long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
          require(
              error.getStatus().getCode() == Status.Code.DEADLINE_EXCEEDED,
              "code " + error.getStatus() + " after " + millis + " ms");
          require(millis < 5000, "took " + millis + " ms");
          // A cancelled countdown leaves "cancelled" under countdown.<call id>.
          String note = "";
          for (int i = 0; i < 100 && !note.equals("cancelled"); i++) {
            try {
              note =
                  stub.callTool(call("", "kv_get", "{\"key\": \"countdown." + id + "\"}"))
                      .getOutput();
            } catch (StatusRuntimeException notYet) {
              Thread.sleep(50);
            }
          }
          require(note.equals("cancelled"), "the countdown left no note: the tool ran on");
          return error.getStatus().getCode() + " after " + millis + " ms";
        });

    check(
        "batch: a result and a per-call google.rpc.Status",
        () -> {
          CallToolsResponse response =
              stub.callTools(
                  CallToolsRequest.newBuilder()
                      .addCalls(call("ok", "echo", "{\"text\": \"batched\"}"))
                      .addCalls(call("missing", "nope", "{}"))
                      .addCalls(call("bad", "echo", "[]"))
                      .build());
          require(response.hasCompleted(), "outcome " + response.getOutcomeCase());
          List<CallResult> results = response.getCompleted().getResultsList();
          require(results.size() == 3, results.size() + " results");
          CallResult ok = results.get(0);
          require(
              ok.getCallId().equals("ok") && !ok.getIsError() && ok.getOutput().equals("batched"),
              "first result " + ok);
          CallResult missing = results.get(1);
          com.google.rpc.Status status = missing.getError(); // a com.google.rpc.Status
          ErrorInfo info = errorInfo(status);
          require(
              missing.getIsError()
                  && status.getCode() == Status.Code.NOT_FOUND.value()
                  && info != null
                  && info.getReason().equals("TOOL_NOT_FOUND"),
              "second result " + missing);
          // The same status as an exception, as a failed CallTool would throw it.
          StatusRuntimeException thrown = StatusProto.toStatusRuntimeException(status);
          require(
              thrown.getStatus().getCode() == Status.Code.NOT_FOUND
                  && errorInfo(StatusProto.fromThrowable(thrown)) != null,
              "rethrown as " + thrown);
          CallResult bad = results.get(2);
          ErrorInfo badInfo = errorInfo(bad.getError());
          require(
              bad.getError().getCode() == Status.Code.INVALID_ARGUMENT.value()
                  && badInfo != null
                  && badInfo.getReason().equals("TOOL_INVALID_ARGUMENT"),
              "third result " + bad);
          return "ok, TOOL_NOT_FOUND, TOOL_INVALID_ARGUMENT";
        });

    check(
        "service config: round_robin, health checks, retries",
        () -> {
          String output =
              ToolServiceGrpc.newBlockingStub(retrying)
                  .withDeadlineAfter(20, TimeUnit.SECONDS)
                  .callTool(call("", "whoami", "{}"))
                  .getOutput();
          require(output.contains("whoami"), "whoami answered '" + output + "'");
          // Health checks are on: a replica whose health service is unknown gets no calls.
          ManagedChannel unhealthy =
              channel(target, credentials, serviceConfig("no.such.Service", false), token);
          try {
            StatusRuntimeException error =
                failure(
                    () ->
                        ToolServiceGrpc.newBlockingStub(unhealthy)
                            .withDeadlineAfter(10, TimeUnit.SECONDS)
                            .callTool(call("", "echo", "{\"text\": \"x\"}"))
                            .getOutput());
            require(
                error.getStatus().getCode() == Status.Code.UNAVAILABLE
                    && String.valueOf(error.getStatus().getDescription()).contains("no.such.Service"),
                "an unhealthy replica answered " + error.getStatus());
            return "an unhealthy replica gets no calls: " + error.getStatus().getDescription();
          } finally {
            unhealthy.shutdownNow();
          }
        });

    if (token != null) {
      check(
          "token: every call carries it, a call without it is UNAUTHENTICATED",
          () -> {
            ManagedChannel anonymous =
                channel(target, credentials, serviceConfig(SERVICE, false), null);
            try {
              StatusRuntimeException error =
                  failure(
                      () ->
                          ToolServiceGrpc.newBlockingStub(anonymous)
                              .withDeadlineAfter(20, TimeUnit.SECONDS)
                              .callTool(call("", "echo", "{\"text\": \"x\"}"))
                              .getOutput());
              ErrorInfo info = errorInfo(StatusProto.fromThrowable(error));
              require(
                  error.getStatus().getCode() == Status.Code.UNAUTHENTICATED
                      && info != null
                      && info.getReason().equals("UNAUTHENTICATED"),
                  "without a token: " + error.getStatus() + ", " + info);
            } finally {
              anonymous.shutdownNow();
            }
            return "";
          });
    }

    if (ca != null) {
      check(
          "tls: verified against the CA, plaintext refused",
          () -> {
            ManagedChannel plaintext =
                channel(
                    target,
                    InsecureChannelCredentials.create(),
                    serviceConfig(SERVICE, false),
                    token);
            return refused(plaintext, "plaintext");
          });
    }

    if (mutual) {
      check(
          "mutual tls: a channel without the client certificate refused",
          () -> {
            ManagedChannel anonymous =
                channel(
                    target,
                    TlsChannelCredentials.newBuilder().trustManager(new File(ca)).build(),
                    serviceConfig(SERVICE, false),
                    token);
            return refused(anonymous, "without a client certificate");
          });
    }
  }
}
