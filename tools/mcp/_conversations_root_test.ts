import { assertEquals, assertThrows } from "../../tests/helpers/assert.ts";
import { defaultMcpConversationsRoot } from "./_conversations_root.ts";

Deno.test({
  name:
    "defaultMcpConversationsRoot is absolute: XDG_STATE_HOME, else HOME's .local/state, else a clear error",
  ignore: Deno.build.os === "windows",
  fn() {
    const saved = {
      XDG_STATE_HOME: Deno.env.get("XDG_STATE_HOME"),
      HOME: Deno.env.get("HOME"),
    };
    const restore = (name: keyof typeof saved) => {
      const value = saved[name];
      if (value === undefined) Deno.env.delete(name);
      else Deno.env.set(name, value);
    };
    try {
      Deno.env.set("XDG_STATE_HOME", "/var/state");
      Deno.env.set("HOME", "/home/ada");
      assertEquals(
        defaultMcpConversationsRoot(),
        "/var/state/skillrun/conversations",
      );
      // A relative XDG_STATE_HOME is ignored, as the XDG spec says.
      Deno.env.set("XDG_STATE_HOME", "state");
      assertEquals(
        defaultMcpConversationsRoot(),
        "/home/ada/.local/state/skillrun/conversations",
      );
      Deno.env.delete("XDG_STATE_HOME");
      Deno.env.delete("HOME");
      assertThrows(
        () => defaultMcpConversationsRoot(),
        Error,
        "pass a root (--root <dir>, or conversationsRoot)",
      );
    } finally {
      restore("XDG_STATE_HOME");
      restore("HOME");
    }
  },
});
