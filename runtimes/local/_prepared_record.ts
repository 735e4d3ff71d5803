/**
 * The record of a local conversation's prepared skills: which skill was
 * copied into which folder of the workspace, with the digest of its files and
 * configuration. A later runtime object of the same conversation (another
 * request, another process) finds an unchanged skill there and neither copies
 * nor bootstraps it again, as the remote runtimes do with their store.
 *
 * It is a JSON file in the workspace (`skills/.skillrun-prepared.json`), read
 * and written through the workspace's fence: nothing outside the workspace is
 * ever touched. A command may change or remove it; that costs at most a new
 * copy and bootstrap (a digest cannot be forged for a changed skill without
 * its configured values).
 *
 * @module
 */
import { hostPath } from "../../_internal/std.ts";
import { writeStreamAtomically } from "../../_internal/atomic_write.ts";
import type { PathFence } from "../../workspace/fence.ts";
import { WorkspaceEscapeError } from "../../workspace/errors.ts";

/** One prepared skill. */
interface Entry {
  /** The folder's name under `<workspace>/skills`. */
  readonly folder: string;
  /** `skillDigest` of the skill and its configuration. */
  readonly digest: string;
}

/** The record file of one conversation workspace. */
export class PreparedRecord {
  readonly #fence: PathFence;
  readonly #path: string;

  /** @param fence The conversation workspace's fence. */
  constructor(fence: PathFence) {
    this.#fence = fence;
    this.#path = hostPath.join(fence.root, "skills", ".skillrun-prepared.json");
  }

  /** The digest recorded for a skill in that folder, if any. */
  async digestOf(name: string, folder: string): Promise<string | undefined> {
    const entry = (await this.#read())[name];
    return entry?.folder === folder ? entry.digest : undefined;
  }

  /** Records a skill as prepared (after its bootstrap succeeded). */
  async mark(name: string, entry: Entry): Promise<void> {
    await this.#write({ ...await this.#read(), [name]: entry });
  }

  /** Forgets a skill (before it is copied again). */
  async forget(name: string): Promise<void> {
    const skills = await this.#read();
    if (!(name in skills)) return;
    delete skills[name];
    await this.#write(skills);
  }

  async #read(): Promise<Record<string, Entry>> {
    let text: string;
    try {
      text = await Deno.readTextFile(await this.#fence.resolve(this.#path));
    } catch (error) {
      // Missing, or made a link out of the workspace: no record.
      if (
        error instanceof Deno.errors.NotFound ||
        error instanceof WorkspaceEscapeError
      ) return {};
      throw error;
    }
    try {
      const parsed = JSON.parse(text) as { skills?: unknown };
      const skills = parsed.skills;
      if (typeof skills !== "object" || skills === null) return {};
      const result: Record<string, Entry> = {};
      for (const [name, value] of Object.entries(skills)) {
        const { folder, digest } = (value ?? {}) as Partial<Entry>;
        if (typeof folder === "string" && typeof digest === "string") {
          result[name] = { folder, digest };
        }
      }
      return result;
    } catch {
      // A damaged record only costs a new copy and bootstrap.
      return {};
    }
  }

  async #write(skills: Record<string, Entry>): Promise<void> {
    const bytes = new TextEncoder().encode(
      `${JSON.stringify({ version: 1, skills }, null, 2)}\n`,
    );
    // The rename replaces a link there rather than writing through it.
    await writeStreamAtomically(
      ReadableStream.from([bytes]),
      await this.#fence.resolve(hostPath.dirname(this.#path)).then((dir) =>
        hostPath.join(dir, hostPath.basename(this.#path))
      ),
    );
  }
}
