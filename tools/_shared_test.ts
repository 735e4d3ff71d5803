import { assertEquals } from "../tests/helpers/assert.ts";
import { cutMiddle, errorText, formatBytes, numberLine } from "./_shared.ts";
import {
  RuntimePermissionError,
  WorkspaceEscapeError,
} from "../runtimes/errors.ts";

Deno.test("cutMiddle() keeps short text and cuts long text around a notice", () => {
  assertEquals(cutMiddle("abc", 3), "abc");
  assertEquals(
    cutMiddle("aaaaabbbbbccccc", 6),
    "aaa\n\n[... 9 characters omitted: the output has 15 characters; the first 3 and the last 3 are shown ...]\n\nccc",
  );
});

Deno.test("formatBytes() writes sizes for people", () => {
  assertEquals(formatBytes(0), "0 bytes");
  assertEquals(formatBytes(1), "1 byte");
  assertEquals(formatBytes(1023), "1023 bytes");
  assertEquals(formatBytes(1536), "1.5 KiB");
  assertEquals(formatBytes(4 * 1024 * 1024), "4 MiB");
});

Deno.test("numberLine() numbers like cat -n", () => {
  assertEquals(numberLine(7, "x"), "     7\tx");
  assertEquals(numberLine(1234567, ""), "1234567\t");
});

Deno.test("errorText() keeps domain messages and names cancellations", () => {
  assertEquals(
    errorText(
      new WorkspaceEscapeError(
        'Cannot use "../x": path is outside the workspace "/w"',
        {
          path: "../x",
          workspace: "/w",
        },
      ),
    ),
    'Cannot use "../x": path is outside the workspace "/w"',
  );
  assertEquals(
    errorText(
      new RuntimePermissionError(
        'Cannot write "/etc/x": Deno denies write access',
        {
          permission: "write",
          source: "deno",
        },
      ),
    ),
    'Cannot write "/etc/x": Deno denies write access',
  );
  const controller = new AbortController();
  controller.abort();
  assertEquals(
    errorText(new Error("whatever"), controller.signal),
    "Cancelled: the call was aborted",
  );
  assertEquals(
    errorText(new DOMException("stop", "AbortError")),
    "Cancelled: the call was aborted",
  );
  assertEquals(errorText("plain"), "plain");
});
