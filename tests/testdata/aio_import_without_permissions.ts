/**
 * Imports `./aio`, builds a plain and a conversation runtime and the tools,
 * closes them, all without any permission (run with no flag): nothing touches
 * the network, the disk or the environment before real use.
 *
 * @module
 */
import { AioSkillRuntime } from "../../runtimes/aio/mod.ts";
import { buildSkillTools } from "../../mod.ts";

const plain = new AioSkillRuntime({
  baseUrl: "https://aio.example.com/sandbox",
  apiKey: "token-never-used",
});
const conversation = new AioSkillRuntime({
  baseUrl: "https://aio.example.com/sandbox",
  conversationId: "edge-1",
});
const built = await buildSkillTools({ skills: [], runtime: conversation });
await built.close();
await conversation.close();
await plain.close();
console.log(
  `ok ${plain.cwd} ${conversation.cwd}`,
);
