import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../tests/helpers/assert.ts";
import type { FilePublisher } from "./context.ts";
import { createPublishFileTool, guessContentType } from "./publish_file.ts";
import {
  conversationContext,
  onHost,
  plainContext,
  tempDir,
  testEachRuntime,
} from "../tests/helpers/tools.ts";

/** A real publisher: PUTs the stream to an HTTP server on loopback. */
function httpPublisher() {
  const received = new Map<
    string,
    { bytes: Uint8Array; type: string | null }
  >();
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    async (request) => {
      const name = decodeURIComponent(new URL(request.url).pathname.slice(1));
      if (name === "fail") {
        await request.body?.cancel();
        return new Response("quota exceeded", { status: 507 });
      }
      received.set(name, {
        bytes: new Uint8Array(await request.arrayBuffer()),
        type: request.headers.get("content-type"),
      });
      return new Response("ok");
    },
  );
  const base = `http://127.0.0.1:${server.addr.port}`;
  const publisher: FilePublisher = {
    async publish({ stream, fileName, contentType, signal }) {
      const response = await fetch(`${base}/${encodeURIComponent(fileName)}`, {
        method: "PUT",
        body: stream,
        headers: { "content-type": contentType },
        ...(signal ? { signal } : {}),
      });
      const text = await response.text();
      if (!response.ok) {
        throw new Error(
          `upload failed with status ${response.status}: ${text}`,
        );
      }
      return {
        url: `${base}/${encodeURIComponent(fileName)}`,
        expiresAt: new Date(Date.UTC(2030, 0, 1)),
      };
    },
  };
  return {
    publisher,
    received,
    base,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

testEachRuntime(
  "publish_file streams a binary file to the publisher and returns the URL and expiry",
  async () => {
    await using dir = await tempDir();
    await using http = await httpPublisher();
    const bytes = new Uint8Array(300_000).map((_, i) => (i * 7) % 256);
    await Deno.writeFile(onHost(`${dir.path}/chart.png`), bytes);
    const tool = createPublishFileTool(
      plainContext(dir.path, { publisher: http.publisher }).context,
    )!;
    assertEquals(await tool.execute({ file_path: "chart.png" }), {
      text:
        `Published chart.png (image/png, 293 KiB)\nURL: ${http.base}/chart.png\nExpires: 2030-01-01T00:00:00.000Z`,
      isError: false,
    });
    assertEquals(http.received.get("chart.png")?.bytes, bytes);
    assertEquals(http.received.get("chart.png")?.type, "image/png");
  },
);

testEachRuntime(
  "publish_file reports a publish whose expiry is an invalid date as a success without expiry",
  async () => {
    await using dir = await tempDir();
    await Deno.writeTextFile(onHost(`${dir.path}/a.txt`), "hello");
    let received = "";
    const publisher: FilePublisher = {
      async publish({ stream }) {
        received = await new Response(stream).text();
        return { url: "https://files.example/a.txt", expiresAt: new Date(NaN) };
      },
    };
    const tool = createPublishFileTool(
      plainContext(dir.path, { publisher }).context,
    )!;
    assertEquals(await tool.execute({ file_path: "a.txt" }), {
      text:
        "Published a.txt (text/plain, 5 bytes)\nURL: https://files.example/a.txt",
      isError: false,
    });
    assertEquals(received, "hello");
  },
);

testEachRuntime(
  "publish_file takes a file name and a content type",
  async () => {
    await using dir = await tempDir();
    await using http = await httpPublisher();
    await Deno.writeTextFile(onHost(`${dir.path}/out.bin`), "a,b\n1,2\n");
    const tool = createPublishFileTool(
      plainContext(dir.path, { publisher: http.publisher }).context,
    )!;
    const result = await tool.execute({
      file_path: `${dir.path}/out.bin`,
      file_name: "résumé données.csv",
      content_type: "text/csv; charset=utf-8",
    });
    assertEquals(result.isError, false);
    assertEquals(
      http.received.get("résumé données.csv")?.type,
      "text/csv; charset=utf-8",
    );
  },
);

testEachRuntime(
  "publish_file reports missing files, folders, bad names and publisher failures",
  async () => {
    await using dir = await tempDir();
    await using http = await httpPublisher();
    await Deno.mkdir(onHost(`${dir.path}/folder`));
    await Deno.writeTextFile(onHost(`${dir.path}/a.txt`), "a");
    const tool = createPublishFileTool(
      plainContext(dir.path, { publisher: http.publisher }).context,
    )!;
    assertEquals(await tool.execute({ file_path: "nope.pdf" }), {
      text: 'Cannot publish "nope.pdf": no such file',
      isError: true,
    });
    assertEquals(await tool.execute({ file_path: "folder" }), {
      text:
        'Cannot publish "folder": it is a folder; archive it first (e.g. with tar or zip)',
      isError: true,
    });
    assertEquals(
      await tool.execute({ file_path: "a.txt", file_name: "../etc/passwd" }),
      {
        text:
          'Cannot publish "a.txt": file_name "../etc/passwd" must be a plain name without folders or control characters',
        isError: true,
      },
    );
    assertEquals(
      await tool.execute({ file_path: "a.txt", content_type: "pdf" }),
      {
        text:
          'Cannot publish "a.txt": content_type "pdf" is not a media type like text/plain',
        isError: true,
      },
    );
    assertEquals(
      await tool.execute({ file_path: "a.txt", file_name: "fail" }),
      {
        text:
          'Cannot publish "a.txt": upload failed with status 507: quota exceeded',
        isError: true,
      },
    );
  },
);

testEachRuntime("publish_file exists only with a publisher", () => {
  assertEquals(createPublishFileTool(plainContext("/").context), undefined);
});

testEachRuntime(
  "publish_file in a conversation refuses a file outside the workspace",
  async () => {
    await using dir = await tempDir();
    await using http = await httpPublisher();
    await Deno.writeTextFile(onHost(`${dir.path}/outside.txt`), "x");
    const { context } = await conversationContext(dir.path, {
      publisher: http.publisher,
    });
    const result = await createPublishFileTool(context)!.execute({
      file_path: `${dir.path}/outside.txt`,
    });
    assert(result.isError);
    assertStringIncludes(result.text, "outside the workspace");
    assertEquals(http.received.size, 0);
  },
);

Deno.test("guessContentType() knows common extensions", () => {
  assertEquals(guessContentType("a.csv"), "text/csv");
  assertEquals(
    guessContentType("deck.PPTX"),
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  );
  assertEquals(guessContentType("noext"), "application/octet-stream");
});
