// What the Node interop checks share, on @llmworker/sdk: failing a check, showing values
// (BigInt and all), and checking a failure's typed error: its class, gRPC code and reason.
import { ERROR_CLASSES, LlmworkerError, fromError } from "@llmworker/sdk";

// JSON text of a value; a BigInt (a Timestamp's seconds) as its digits.
export const show = (value) => JSON.stringify(value, (_, v) => (typeof v === "bigint" ? v.toString() : v));

// A check's fail(check, why): prints "FAIL <prefix><check>: <why>" and exits 1.
export function failer(prefix) {
  return (check, why) => {
    console.log(`FAIL ${prefix}${check}: ${why}`);
    process.exit(1);
  };
}

// An error as "CODE REASON message" (or as it is, when the SDK did not type it).
export function failure(error) {
  return error instanceof LlmworkerError ? `${error.codeName} ${error.reason || "(no reason)"} ${show(error.message)}` : String(error);
}

// The typed error a promise rejected with, or null when it resolved.
export async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return fromError(error);
  }
  return null;
}

// Why error is not the SDK's typed error of reason (domain "llmworker": its class in
// ERROR_CLASSES) with the gRPC code codeName, or null when it is.
export function notTyped(error, codeName, reason) {
  if (!(error instanceof LlmworkerError)) return `${String(error)}, want an LlmworkerError`;
  if (error.codeName !== codeName) return `${failure(error)}, want ${codeName}`;
  const Class = ERROR_CLASSES[reason];
  if (error.reason !== reason || !Class || !(error instanceof Class)) {
    return `reason ${show(error.reason)} (class ${error.constructor.name}), want ${reason} (${Class?.name})`;
  }
  return null;
}
