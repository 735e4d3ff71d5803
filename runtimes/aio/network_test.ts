import {
  assertEquals,
  assertStringIncludes,
  assertThrows,
} from "../../tests/helpers/assert.ts";
import { AioSkillRuntime } from "./runtime.ts";

Deno.test("aio refuses a network policy or secrets with a clear error, before any request", () => {
  let calls = 0;
  const fetch = () => {
    calls++;
    return Promise.reject(new TypeError("offline"));
  };
  const error = assertThrows(
    () =>
      new AioSkillRuntime({
        baseUrl: "http://aio.invalid:8080",
        network: { allow: ["pypi.org"] },
        fetch,
      }),
    TypeError,
  );
  assertStringIncludes(
    error.message,
    "Cannot use the network option with AIO Sandbox: the service has no egress policy",
  );
  const secret = assertThrows(
    () =>
      new AioSkillRuntime({
        baseUrl: "http://aio.invalid:8080",
        secrets: { K: { hosts: ["a.com"], value: "v-secret" } },
        fetch,
      }),
    TypeError,
  );
  assertEquals(secret.message.includes("v-secret"), false);
  assertEquals(calls, 0);
});
