import { assert, assertEquals } from "@std/assert";
import {
  MIN_FRAGMENT_LENGTH,
  MIN_SECRET_LENGTH,
  REDACTED,
  redactError,
  Redactor,
  redactSecrets,
} from "./redact.ts";
import { OutputCollector } from "./collector.ts";

Deno.test("redact: a secret is replaced everywhere, inside words too", () => {
  assertEquals(
    redactSecrets("a=sk-12345678 xsk-12345678y", ["sk-12345678"]),
    `a=${REDACTED} x${REDACTED}y`,
  );
});

Deno.test("redact: a short value is replaced only as a whole word", () => {
  const redactor = new Redactor(["prod", "dev1"]);
  assertEquals(redactor.redact("MODE=prod"), `MODE=${REDACTED}`);
  assertEquals(
    redactor.redact("production, prod."),
    `production, ${REDACTED}.`,
  );
  assertEquals(
    redactor.redact("prod_x dev12 (dev1)"),
    `prod_x dev12 (${REDACTED})`,
  );
  // Letters of any script count as word characters.
  assertEquals(redactor.redact("éprod prodé"), "éprod prodé");
});

Deno.test("redact: values under 4 characters are never replaced", () => {
  assertEquals(
    redactSecrets("eu region 1 abc", ["eu", "1", "abc"]),
    "eu region 1 abc",
  );
});

Deno.test("redact: each line of a multi-line secret is a secret", () => {
  const pem = [
    "-----BEGIN PRIVATE KEY-----",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
    "q1w2e3r4t5y6u7i8o9p0",
    "-----END PRIVATE KEY-----",
  ].join("\r\n");
  const redactor = new Redactor([pem]);
  assertEquals(redactor.redact(`key:\n${pem}\n`), `key:\n${REDACTED}\n`);
  for (const line of pem.split("\r\n")) {
    assertEquals(redactor.redact(`  3\t${line}`), `  3\t${REDACTED}`);
  }
  // Joined by LF instead of CRLF: every line still goes.
  const lf = redactor.redact(pem.replaceAll("\r\n", "\n"));
  assert(!lf.includes("MIIEvQ") && !lf.includes("q1w2e3"), lf);
});

Deno.test("redact: the start or end of a secret next to a cut marker goes too", () => {
  const secret = "ghp_abcdefghijklmnop";
  const collector = new OutputCollector({ maxBytes: 40 });
  const text = `${"x".repeat(10)}${secret}${"y".repeat(100)}${secret}${
    "z".repeat(5)
  }`;
  collector.push(new TextEncoder().encode(text));
  const cut = collector.text();
  assert(cut.includes("bytes omitted"), cut);
  const clean = redactSecrets(cut, [secret]);
  for (let k = MIN_FRAGMENT_LENGTH; k < secret.length; k++) {
    assert(!clean.includes(secret.slice(0, k) + "\n["), clean);
    assert(!clean.includes("]\n" + secret.slice(secret.length - k)), clean);
  }
  assert(clean.includes(REDACTED), clean);
  // Ordinary text next to a marker stays.
  assertEquals(
    redactSecrets("abc\n[... 5 bytes omitted ...]\nxyz", [secret]),
    "abc\n[... 5 bytes omitted ...]\nxyz",
  );
});

Deno.test("redact: at every cut position no fragment of 3+ characters survives", () => {
  const secret = "s3cret-VALUE-0123456789";
  assert(secret.length >= MIN_SECRET_LENGTH);
  for (let cut = 0; cut <= secret.length; cut++) {
    const text = `log ${secret.slice(0, cut)}\n[... 99 bytes omitted ...]\n${
      secret.slice(cut)
    } end`;
    const clean = redactSecrets(text, [secret]);
    for (let k = MIN_FRAGMENT_LENGTH; k <= secret.length; k++) {
      for (let i = 0; i + k <= secret.length; i++) {
        const piece = secret.slice(i, i + k);
        if (piece.length >= 3 && /[A-Z0-9]{3}/.test(piece)) {
          assert(!clean.includes(piece), `${cut}: ${clean}`);
        }
      }
    }
  }
});

Deno.test("redact: regular-expression characters in words mean themselves", () => {
  assertEquals(redactSecrets("a+b* a+b*c", ["a+b*"]), `${REDACTED} a+b*c`);
  assertEquals(redactSecrets("(x-y)", ["x-y1"]), "(x-y)");
});

Deno.test("redact: an excerpt's ellipsis is a cut: a secret's start before it goes", () => {
  const redactor = new Redactor(["abcd1234efgh"]);
  assertEquals(redactor.redact("echo: abcd1…"), `echo: ${REDACTED}…`);
  assertEquals(redactor.redact("echo: ab…"), "echo: ab…");
  assertEquals(redactor.redact("wait… abcd1234efgh"), `wait… ${REDACTED}`);
});

Deno.test("redact: a secret given back collapsed or JSON-escaped is found", () => {
  const redactor = new Redactor(['p4ss "word"\tand\\more']);
  assertEquals(
    redactor.redact('{"v":"p4ss \\"word\\"\\tand\\\\more"}'),
    `{"v":"${REDACTED}"}`,
  );
  assertEquals(redactor.redact('p4ss "word" and\\more'), REDACTED);
});

Deno.test("redact: redactError cleans every string of an error and its causes", () => {
  const secret = "abcd1234efgh";
  const inner = new Error(`inner ${secret}`);
  const error = Object.assign(
    new AggregateError([new Error(`one ${secret}`)], `outer ${secret}`, {
      cause: inner,
    }),
    { serverMessage: `server ${secret}`, status: 500 },
  );
  redactError(error, new Redactor([secret]));
  for (
    const text of [
      error.message,
      error.stack ?? "",
      error.serverMessage,
      inner.message,
      inner.stack ?? "",
      (error.errors[0] as Error).message,
      Deno.inspect(error),
    ]
  ) {
    assert(!text.includes(secret), text);
    assert(!text.includes("abcd1234"), text);
  }
  assertEquals(error.status, 500);
  assertEquals(
    redactError(`x ${secret}`, new Redactor([secret])),
    `x ${REDACTED}`,
  );
});
