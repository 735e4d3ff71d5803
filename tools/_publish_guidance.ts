/**
 * The guidance on delivering files that the `publish_file` and `skill`
 * tools give: a module of its own, so that the `skill` tool does not load
 * `publish_file` (and its media-type table) for it.
 *
 * @module
 */

/**
 * What a model is told about delivering files when the application gives a
 * publisher (in the `publish_file` and `skill` tools' descriptions), after the
 * original framework's guidance: publish the final files of a task by default
 * and whenever the user asks to send, give, attach or share one; answer with
 * the URL, never an internal path; never claim a delivery without a publish;
 * skip it when the user says not to; never invent a path.
 */
export const PUBLISH_GUIDANCE: string =
  "Delivering files: publish the final files a task produces with publish_file by default, " +
  "and whenever the user asks to send, give, attach or share a file. " +
  "Answer with the URL it returns, never with an internal path of the runtime. " +
  "Never say a file was sent or delivered unless publish_file returned its URL. " +
  "Do not publish when the user says not to. " +
  "Give publish_file only the path of a file that exists in the runtime (one a command or a listing showed); never invent a host path.";
