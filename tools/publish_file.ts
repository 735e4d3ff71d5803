/**
 * The `publish_file` tool: hands a file produced in the runtime to the
 * application's {@linkcode FilePublisher} and returns its URL.
 *
 * @module
 */
import type { FilePublisher, ToolContext } from "./context.ts";
import type { Tool } from "./types.ts";
import { defineTool, formatBytes, okResult, pathError } from "./_shared.ts";
import { typeByExtension } from "../_internal/media_types.ts";
import { PUBLISH_GUIDANCE } from "./_publish_guidance.ts";

export { PUBLISH_GUIDANCE };

// deno-lint-ignore no-control-regex
const FILE_NAME = /^[^/\\\u0000-\u001f]{1,255}$/;
const CONTENT_TYPE = /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;.*)?$/;

/**
 * Guesses a media type from a file name's extension.
 *
 * @example Guessing media types
 * ```ts
 * import { assert } from "@std/assert";
 * import { guessContentType } from "./publish_file.ts";
 * assert(guessContentType("report.PDF") === "application/pdf");
 * assert(guessContentType("data.bin") === "application/octet-stream");
 * ```
 *
 * @param fileName A file name.
 * @returns The media type, `application/octet-stream` when unknown.
 */
export function guessContentType(fileName: string): string {
  const extension = /\.([^./\\]+)$/.exec(fileName)?.[1]?.toLowerCase();
  return (extension && typeByExtension(extension)) ||
    "application/octet-stream";
}

/**
 * Makes the `publish_file` tool, or `undefined` without a publisher in the
 * context. It streams the file (never loading it whole) to the publisher and
 * returns the URL and, when the publisher gives one, the expiry. The
 * publisher decides where files go.
 *
 * @example Publishing to a folder a web server serves
 * ```ts
 * import { assert } from "@std/assert";
 * import { createPublishFileTool } from "./publish_file.ts";
 * import { createToolContext } from "./context.ts";
 * import { type PublishRequest, LocalSkillRuntime } from "@skillrun/skillrun";
 * const served = await Deno.makeTempDir(); // a folder a web server would serve
 * const publisher = {
 *   async publish({ stream, fileName }: PublishRequest) {
 *     await Deno.writeFile(`${served}/${fileName}`, stream);
 *     return { url: `https://files.example.com/${fileName}` };
 *   },
 * };
 * const work = await Deno.makeTempDir();
 * await Deno.writeTextFile(`${work}/report.csv`, "a,b\n1,2\n");
 * await using runtime = new LocalSkillRuntime({ cwd: work });
 * const tool = createPublishFileTool(createToolContext(runtime, { publisher }))!;
 * const result = await tool.execute({ file_path: "report.csv" });
 * assert(result.text.endsWith("URL: https://files.example.com/report.csv"));
 * assert(await Deno.readTextFile(`${served}/report.csv`) === "a,b\n1,2\n");
 * await Deno.remove(served, { recursive: true });
 * await Deno.remove(work, { recursive: true });
 * ```
 *
 * @param context The shared context (runtime, publisher).
 * @returns The tool, or `undefined` without a publisher.
 */
export function createPublishFileTool(context: ToolContext): Tool | undefined {
  const publisher: FilePublisher | undefined = context.publisher;
  if (!publisher) return undefined;
  const { runtime } = context;
  return defineTool(context, {
    name: "publish_file",
    timeoutMs: context.limits.publishTimeoutMs,
    description:
      `Publishes a file from the "${runtime.name}" runtime so the user can download it, and returns its URL. ` +
      "Use it for results the user should receive (reports, images, archives). " +
      "file_name is the name the download carries (default: the file's own name); content_type its media type (default: guessed from the name). " +
      PUBLISH_GUIDANCE,
    inputSchema: {
      type: "object",
      properties: {
        file_path: {
          type: "string",
          minLength: 1,
          description:
            "The file to publish (absolute, or relative to the default working directory).",
        },
        file_name: {
          type: "string",
          minLength: 1,
          description: "The name of the published file, e.g. report.pdf.",
        },
        content_type: {
          type: "string",
          minLength: 1,
          description: "The media type, e.g. application/pdf.",
        },
      },
      required: ["file_path"],
      additionalProperties: false,
    },
    async run({ input, signal }) {
      const given = input.file_path as string;
      const path = await runtime.fs.resolve(given);
      const options = signal ? { signal } : {};
      const info = await runtime.fs.stat(path, options);
      if (!info) return pathError("publish", given, "no such file");
      if (info.type === "directory") {
        return pathError(
          "publish",
          given,
          "it is a folder; archive it first (e.g. with tar or zip)",
        );
      }
      if (info.type === "other") {
        return pathError("publish", given, "it is not a regular file");
      }
      const fileName = (input.file_name as string | undefined) ??
        (path.split(/[\\/]/).pop() || "file");
      if (!FILE_NAME.test(fileName)) {
        return pathError(
          "publish",
          given,
          `file_name ${
            JSON.stringify(fileName)
          } must be a plain name without folders or control characters`,
        );
      }
      const contentType = (input.content_type as string | undefined) ??
        guessContentType(fileName);
      if (!CONTENT_TYPE.test(contentType)) {
        return pathError(
          "publish",
          given,
          `content_type ${
            JSON.stringify(contentType)
          } is not a media type like text/plain`,
        );
      }
      const opened = await runtime.fs.readStream(path, options);
      // The size announced is what stat saw; the stream is measured, and
      // one that differs (the file changed, or a link led elsewhere) fails
      // the publisher's read instead of publishing other bytes than announced.
      const announced = info.type === "file" ? info.size : undefined;
      let streamed = 0;
      const changed = () =>
        new Error(
          `Cannot publish ${
            JSON.stringify(given)
          }: the file changed while it was published (${announced} bytes announced, ${streamed} streamed)`,
        );
      const stream = opened.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, controller) {
            streamed += chunk.length;
            if (announced !== undefined && streamed > announced) {
              throw changed();
            }
            controller.enqueue(chunk);
          },
          flush() {
            if (announced !== undefined && streamed !== announced) {
              throw changed();
            }
          },
        }),
      );
      let published;
      try {
        published = await publisher.publish({
          stream,
          fileName,
          contentType,
          ...(announced !== undefined ? { size: announced } : {}),
          ...options,
        });
      } catch (error) {
        await stream.cancel().catch(() => {});
        await opened.cancel().catch(() => {});
        throw new Error(
          `Cannot publish ${JSON.stringify(given)}: ${
            error instanceof Error ? error.message : String(error)
          }`,
          { cause: error },
        );
      }
      if (!published || typeof published.url !== "string") {
        return pathError("publish", given, "the publisher returned no URL");
      }
      const expires = expiryLine(published.expiresAt);
      return okResult(
        `Published ${fileName} (${contentType}, ${
          formatBytes(announced ?? streamed)
        })\nURL: ${published.url}${expires}`,
      );
    },
  });
}

// The expiry shown to the model; none when the publisher gave none or an
// invalid date (the file is published: that must not become an error).
function expiryLine(expiresAt: Date | string | undefined): string {
  if (expiresAt === undefined || expiresAt === null) return "";
  if (!(expiresAt instanceof Date)) return `\nExpires: ${String(expiresAt)}`;
  return Number.isNaN(expiresAt.getTime())
    ? ""
    : `\nExpires: ${expiresAt.toISOString()}`;
}
