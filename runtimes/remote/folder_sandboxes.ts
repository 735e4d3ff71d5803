/**
 * {@linkcode FolderSandboxes}: a sandbox service over one existing machine
 * that the kind never creates or deletes (an AIO container). Plain mode
 * attaches to the machine itself; in conversation mode a conversation's
 * folder is its sandbox, named by the id in a marker file written once
 * beside the workspace, so a folder wiped since its record was made (a
 * machine that was reset) is noticed and its skills are uploaded again.
 *
 * @module
 */
import { shellQuote } from "./shell.ts";
import { posix } from "../../_internal/std.ts";
import {
  shellMakeDirectories,
  shellRemove,
  type ShellRunner,
} from "./shell_files.ts";
import type { RemoteSession } from "./runtime.ts";
import type { SandboxService, ServiceSandbox } from "./sandbox_service.ts";

/** Options of {@linkcode FolderSandboxes}. */
export interface FolderSandboxesOptions {
  /** The machine's base URL without credentials (keys conversations). */
  readonly serverUrl: string;
  /** The runtime's name, for errors (`aio-sandbox`). */
  readonly runtimeName: string;
  /** What the machine is, for errors (`container`). */
  readonly machine: string;
  /** The machine's own sandbox id (plain mode's `sandboxId`). */
  readonly machineId: string;
  /** The start of a conversation folder's id (`aio-`: `aio-<uuid>`). */
  readonly idPrefix: string;
  /** Conversation mode: the workspace and the marker file beside it. */
  readonly conversation?:
    | { readonly workspace: string; readonly marker: string }
    | undefined;
  /** The machine's calls. */
  readonly session: RemoteSession;
  /**
   * Runs the helper commands on the machine: the marker, `mkdir -p` of the
   * session's folders, `rm -rf` of a conversation's folder and marker.
   */
  readonly shell: ShellRunner;
  /** Releases what the kind holds (e.g. its sessions), once, last. */
  readonly close?: () => Promise<void>;
}

/**
 * One machine as a {@linkcode SandboxService} (see the module's
 * description). Makes no request until a call.
 *
 * @example Plain mode knows only the machine itself
 * ```ts
 * import { assertEquals, assertRejects } from "@std/assert";
 * import { FolderSandboxes } from "./folder_sandboxes.ts";
 * const none = () => Promise.reject(new Error("no machine here"));
 * const sandboxes = new FolderSandboxes({
 *   serverUrl: "http://machine.invalid",
 *   runtimeName: "mine",
 *   machine: "host",
 *   machineId: "mine-host",
 *   idPrefix: "mine-",
 *   session: { files: {} as never },
 *   shell: none,
 * });
 * assertEquals(await sandboxes.get("mine-host"), { id: "mine-host", expiresAt: null });
 * assertEquals(await sandboxes.get("other"), null);
 * await assertRejects(() => sandboxes.delete("mine-host"), Error, "never deletes its host");
 * ```
 */
export class FolderSandboxes implements SandboxService {
  /** The machine's base URL. */
  readonly serverUrl: string;
  readonly #options: FolderSandboxesOptions;
  /** Folders the marker command made (not made again on connect). */
  readonly #made = new Set<string>();

  /**
   * Makes the service; makes no request.
   *
   * @param options The machine, its calls and the conversation.
   */
  constructor(options: FolderSandboxesOptions) {
    this.serverUrl = options.serverUrl;
    this.#options = options;
  }

  /**
   * A conversation's folder, named by its marker (written when missing).
   *
   * @returns The folder as a sandbox.
   */
  async create(): Promise<ServiceSandbox> {
    return { id: await this.#marker(), expiresAt: null };
  }

  /**
   * The machine itself (plain mode), or the conversation's folder when its
   * marker holds `id`.
   *
   * @param id The sandbox id.
   * @returns The sandbox, or `null`.
   */
  async get(id: string): Promise<ServiceSandbox | null> {
    if (!this.#options.conversation) {
      return id === this.#options.machineId ? { id, expiresAt: null } : null;
    }
    return (await this.#marker()) === id ? { id, expiresAt: null } : null;
  }

  /**
   * Never gone: a folder wiped is noticed by its marker.
   *
   * @returns `undefined`.
   */
  gone(): undefined {
    return undefined;
  }

  /**
   * Removes a conversation's folder and marker; never the machine.
   *
   * @param id The sandbox id.
   */
  async delete(id: string): Promise<void> {
    const { conversation, machineId, runtimeName, machine } = this.#options;
    if (!conversation || id === machineId) {
      throw new Error(
        `Cannot destroy: the ${runtimeName} runtime never deletes its ${machine}`,
      );
    }
    try {
      const paths = [conversation.workspace, conversation.marker];
      await shellRemove(this.#options.shell, paths);
    } finally {
      await this.close();
    }
  }

  /**
   * The machine's calls; folders the marker command made are not made again.
   *
   * @returns The session.
   */
  open(): Promise<RemoteSession> {
    return Promise.resolve({
      ...this.#options.session,
      makeDirectories: (paths, signal) =>
        shellMakeDirectories(
          this.#options.shell,
          paths.filter((p) => !this.#made.has(p)),
          signal,
        ),
    });
  }

  /**
   * Releases what the kind holds.
   *
   * @returns Once released.
   */
  async close(): Promise<void> {
    await this.#options.close?.();
  }

  /**
   * Makes the workspace and reads (or writes, once) the id of this
   * conversation's folder on the machine.
   */
  async #marker(): Promise<string> {
    const { workspace, marker } = this.#options.conversation!;
    const prefix = this.#options.idPrefix;
    const id = `${prefix}${crypto.randomUUID()}`;
    const m = shellQuote(marker);
    const skills = posix.join(workspace, "skills");
    const result = await this.#options.shell(
      `mkdir -p -- ${shellQuote(skills)}` +
        ` && { (set -C; printf %s ${shellQuote(id)} > ${m}) 2>/dev/null;` +
        ` for i in 1 2 3 4 5 6 7 8 9 10; do s=$(cat -- ${m}); [ -n "$s" ] && break; sleep 0.05; done;` +
        ` printf %s "$s"; }`,
    );
    const markerId = result.stdout.trim();
    if (
      result.exitCode !== 0 || !markerId.startsWith(prefix) ||
      !/^[0-9a-f-]{36}$/.test(markerId.slice(prefix.length))
    ) {
      throw new Error(
        `Cannot open the conversation workspace "${workspace}": ${
          result.stderr.trim().slice(0, 300) ||
          `the ${this.#options.machine} answered ${
            JSON.stringify(markerId.slice(0, 100))
          }`
        }`,
      );
    }
    this.#made.add(skills);
    return markerId;
  }
}
