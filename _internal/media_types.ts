/**
 * `@std/media-types`' `typeByExtension`, typed (see `std.ts`): apart from
 * `std.ts` because its table of media types is large, and only
 * `publish_file` needs it.
 *
 * @module
 */
import * as mediaTypes from "@std/media-types";

/** The media type of a file extension (`"pdf"` or `".pdf"`), if known. */
export const typeByExtension: (extension: string) => string | undefined =
  mediaTypes.typeByExtension;
