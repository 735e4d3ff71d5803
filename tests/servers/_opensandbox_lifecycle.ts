/**
 * The lifecycle API of the OpenSandbox test server (`opensandbox.ts`):
 * `/v1/sandboxes` create, list, get, delete, renew, pause, resume, metadata,
 * and the endpoints of a sandbox's ports, with the API key check.
 *
 * @module
 */
import {
  networkPolicyProblem,
  startSandboxEgress,
} from "./_opensandbox_egress.ts";
import { isObject } from "./_common.ts";
import { lifecycleError, pyJson, readJson } from "./_opensandbox_answers.ts";
import type { OpenSandboxState } from "./_opensandbox_state.ts";

/** Answers a lifecycle request (`/health`, `/v1/...`) after the API key check. */
export async function lifecycle(
  state: OpenSandboxState,
  request: Request,
  route: string,
): Promise<Response> {
  const url = new URL(request.url);
  if (route === "/health") return pyJson(200, { status: "healthy" });
  const apiKey = state.options.apiKey;
  if (apiKey !== undefined && apiKey !== "") {
    const given = request.headers.get("open-sandbox-api-key");
    if (given === null || given === "") {
      return lifecycleError(
        401,
        "MISSING_API_KEY",
        "Authentication credentials are missing. Provide API key via OPEN-SANDBOX-API-KEY header.",
      );
    }
    if (given !== apiKey) {
      return lifecycleError(
        401,
        "INVALID_API_KEY",
        "Authentication credentials are invalid. Check your API key and try again.",
      );
    }
  }
  state.sweep();
  const method = request.method;
  const parts = route.split("/").slice(2); // ["sandboxes", id, ...]
  const notFound = () =>
    lifecycleError(404, "GENERAL::UNKNOWN_ERROR", "Not Found");
  const notAllowed = () =>
    lifecycleError(405, "GENERAL::UNKNOWN_ERROR", "Method Not Allowed");
  if (parts[0] !== "sandboxes") return notFound();
  if (parts.length === 1) {
    if (method === "POST") return await createSandbox(state, request);
    if (method === "GET") return listSandboxes(state, url);
    return notAllowed();
  }
  const id = decodeURIComponent(parts[1] ?? "");
  const sandbox = state.sandboxes.get(id);
  const missing = () =>
    lifecycleError(
      404,
      "DOCKER::SANDBOX_NOT_FOUND",
      `Sandbox ${id} not found.`,
    );
  if (parts.length === 2) {
    if (method === "GET") {
      return sandbox === undefined
        ? missing()
        : pyJson(200, state.sandboxJson(sandbox, true));
    }
    if (method === "DELETE") {
      if (sandbox === undefined) return missing();
      state.removeSandbox(id);
      return new Response(null, {
        status: 204,
        headers: { "x-request-id": crypto.randomUUID() },
      });
    }
    return notAllowed();
  }
  const action = parts[2];
  if (action === "endpoints" && parts.length === 4) {
    if (method !== "GET") return notAllowed();
    const port = Number(parts[3]);
    if (!/^\d+$/.test(parts[3] ?? "") || port < 1 || port > 65535) {
      return lifecycleError(
        400,
        "GENERAL::INVALID_REQUEST",
        `Invalid port: ${parts[3]}`,
      );
    }
    if (sandbox === undefined) return missing();
    const headers = state.options.endpointHeaders;
    return pyJson(200, {
      endpoint: endpointOf(state, id, port),
      ...(headers === undefined || Object.keys(headers).length === 0
        ? {}
        : { headers }),
    });
  }
  if (parts.length !== 3) return notFound();
  if (action === "renew-expiration") {
    if (method !== "POST") return notAllowed();
    if (sandbox === undefined) return missing();
    const body = await readJson(request);
    const raw = body.ok && isObject(body.value)
      ? body.value.expiresAt
      : undefined;
    const at = typeof raw === "string" ? new Date(raw) : undefined;
    if (at === undefined || Number.isNaN(at.getTime())) {
      return lifecycleError(
        400,
        "GENERAL::INVALID_REQUEST",
        "expiresAt must be an RFC 3339 date-time",
      );
    }
    if (at.getTime() <= Date.now()) {
      return lifecycleError(
        400,
        "GENERAL::INVALID_REQUEST",
        "expiresAt must be in the future",
      );
    }
    sandbox.expiresAt = at;
    return pyJson(200, { expiresAt: at.toISOString() });
  }
  if (action === "pause" || action === "resume") {
    if (method !== "POST") return notAllowed();
    if (sandbox === undefined) return missing();
    sandbox.paused = action === "pause";
    return new Response(null, { status: 202 });
  }
  if (action === "metadata") {
    if (method !== "PATCH") return notAllowed();
    if (sandbox === undefined) return missing();
    const body = await readJson(request);
    if (!body.ok || !isObject(body.value)) {
      return lifecycleError(
        400,
        "GENERAL::INVALID_REQUEST",
        "The body must be a JSON object",
      );
    }
    for (const [key, value] of Object.entries(body.value)) {
      if (value === null) delete sandbox.metadata[key];
      else sandbox.metadata[key] = String(value);
    }
    return pyJson(200, state.sandboxJson(sandbox, true));
  }
  return notFound();
}

/** The endpoint (no scheme) the lifecycle API gives for a sandbox port. */
export function endpointOf(
  state: OpenSandboxState,
  id: string,
  port: number,
): string {
  const template = state.options.endpointPath ?? "/sandboxes/{id}/port/{port}";
  return state.host +
    template.replaceAll("{id}", encodeURIComponent(id)).replaceAll(
      "{port}",
      String(port),
    );
}

async function createSandbox(
  state: OpenSandboxState,
  request: Request,
): Promise<Response> {
  const body = await readJson(request);
  if (!body.ok || !isObject(body.value)) {
    return lifecycleError(
      400,
      "GENERAL::INVALID_REQUEST",
      "The body must be a JSON object",
    );
  }
  const value = body.value;
  const invalid = (message: string) =>
    lifecycleError(400, "GENERAL::INVALID_REQUEST", message);
  const hasImage = value.image !== undefined && value.image !== null;
  const hasSnapshot = value.snapshotId !== undefined &&
    value.snapshotId !== null;
  if (hasImage === hasSnapshot) {
    return invalid("Exactly one of image or snapshotId must be provided");
  }
  if (
    hasImage &&
    (!isObject(value.image) || typeof value.image.uri !== "string" ||
      value.image.uri === "")
  ) {
    return invalid("image.uri is required");
  }
  if (
    hasImage &&
    (!Array.isArray(value.entrypoint) || value.entrypoint.length === 0)
  ) {
    return invalid("entrypoint is required when image is provided");
  }
  if (
    value.timeout !== undefined && value.timeout !== null &&
    (typeof value.timeout !== "number" || !Number.isInteger(value.timeout) ||
      value.timeout < 60)
  ) {
    return invalid("timeout must be an integer of at least 60 seconds");
  }
  for (const field of ["metadata", "env", "resourceLimits"]) {
    const map = value[field];
    if (map !== undefined && map !== null) {
      if (
        !isObject(map) ||
        Object.values(map).some((entry) => typeof entry !== "string")
      ) {
        return invalid(`${field} must be an object of strings`);
      }
    }
  }
  const policyProblem = networkPolicyProblem(value.networkPolicy);
  if (policyProblem !== undefined) return invalid(policyProblem);
  const sandbox = state.createSandbox(value);
  const egress = await startSandboxEgress(
    value.networkPolicy,
    state.options.resolve ?? {},
  );
  if (egress) state.egress.set(sandbox.id, egress);
  return pyJson(202, state.sandboxJson(sandbox, false), {
    "x-request-id": crypto.randomUUID(),
    location: `/v1/sandboxes/${sandbox.id}`,
  });
}

function listSandboxes(state: OpenSandboxState, url: URL): Response {
  const states = url.searchParams.getAll("state");
  const metadata = url.searchParams.get("metadata");
  const wanted = metadata === null ? [] : [...new URLSearchParams(metadata)];
  const page = Math.max(1, Number(url.searchParams.get("page") ?? 1) || 1);
  const pageSize = Math.max(
    1,
    Number(url.searchParams.get("pageSize") ?? 20) || 20,
  );
  const matching = [...state.sandboxes.values()]
    .filter((sandbox) =>
      (states.length === 0 ||
        states.some((s) =>
          s.toLowerCase() === state.state(sandbox).toLowerCase()
        )) &&
      wanted.every(([key, value]) => sandbox.metadata[key] === value)
    )
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  const totalPages = Math.ceil(matching.length / pageSize);
  return pyJson(200, {
    items: matching.slice((page - 1) * pageSize, page * pageSize).map((
      sandbox,
    ) => state.sandboxJson(sandbox, true)),
    pagination: {
      page,
      pageSize,
      totalItems: matching.length,
      totalPages,
      hasNextPage: page < totalPages,
    },
  });
}
