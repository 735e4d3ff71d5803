/**
 * Generated catalogs of many skills for the catalog budget and `skill_search`
 * tests and benchmarks: skill number `i` is about a pair of topic words
 * (`invoice` and `chart`...), every pair once, so skills differ only by that
 * pair; the rest of each description is shared filler.
 *
 * @module
 */
import type { Skill } from "../../skill/types.ts";

/** The topic words; their pairs name the skills (139 words: 9,591 pairs). */
export const TOPIC_WORDS: readonly string[] = [
  "invoice",
  "chart",
  "spreadsheet",
  "calendar",
  "email",
  "slide",
  "contract",
  "receipt",
  "ticket",
  "diagram",
  "poster",
  "budget",
  "payroll",
  "survey",
  "resume",
  "newsletter",
  "podcast",
  "video",
  "photo",
  "audio",
  "subtitle",
  "translation",
  "glossary",
  "recipe",
  "menu",
  "itinerary",
  "flight",
  "hotel",
  "weather",
  "forecast",
  "inventory",
  "shipment",
  "warehouse",
  "customer",
  "lead",
  "campaign",
  "advert",
  "banner",
  "logo",
  "font",
  "palette",
  "icon",
  "website",
  "blog",
  "wiki",
  "changelog",
  "release",
  "deployment",
  "container",
  "cluster",
  "database",
  "migration",
  "backup",
  "firewall",
  "certificate",
  "password",
  "token",
  "webhook",
  "cron",
  "queue",
  "cache",
  "index",
  "query",
  "report",
  "dashboard",
  "metric",
  "alert",
  "incident",
  "postmortem",
  "runbook",
  "playbook",
  "onboarding",
  "interview",
  "offer",
  "benefit",
  "vacation",
  "expense",
  "mileage",
  "tax",
  "audit",
  "ledger",
  "forex",
  "stock",
  "bond",
  "mortgage",
  "loan",
  "insurance",
  "claim",
  "policy",
  "patent",
  "trademark",
  "lawsuit",
  "court",
  "permit",
  "license",
  "grant",
  "proposal",
  "thesis",
  "citation",
  "bibliography",
  "lecture",
  "quiz",
  "exam",
  "homework",
  "lesson",
  "syllabus",
  "transcript",
  "caption",
  "storyboard",
  "screenplay",
  "novel",
  "poem",
  "lyric",
  "melody",
  "chord",
  "drum",
  "guitar",
  "piano",
  "orchestra",
  "museum",
  "gallery",
  "sculpture",
  "painting",
  "garden",
  "plant",
  "fertilizer",
  "tractor",
  "harvest",
  "vineyard",
  "brewery",
  "bakery",
  "pharmacy",
  "vaccine",
  "symptom",
  "diagnosis",
  "prescription",
  "xray",
  "genome",
  "protein",
  "molecule",
  "telescope",
  "satellite",
];

/** The two topic words of skill number `i` (every pair once). */
export function topicsOf(i: number): [string, string] {
  const n = TOPIC_WORDS.length;
  let first = 0;
  let index = i;
  while (index >= n - 1 - first) {
    index -= n - 1 - first;
    first++;
    if (first >= n - 1) {
      throw new RangeError(
        `Cannot generate skill ${i}: only ${(n * (n - 1)) / 2} pairs`,
      );
    }
  }
  return [TOPIC_WORDS[first]!, TOPIC_WORDS[first + 1 + index]!];
}

/** The name of skill number `i`: its two topic words. */
export function manySkillName(i: number): string {
  const [a, b] = topicsOf(i);
  return `${a}-${b}`;
}

/** The description of skill number `i`. */
export function manySkillDescription(i: number): string {
  const [a, b] = topicsOf(i);
  return `Creates, checks and converts ${a} files together with ${b} data. ` +
    `Use it when the user asks to make, fix, summarise or export a ${a} ` +
    `that involves a ${b}, or to turn one into the other.`;
}

/** The instructions (body) of skill number `i`, with headings. */
export function manySkillInstructions(i: number): string {
  const [a, b] = topicsOf(i);
  return `# ${a} and ${b}\n\n## Steps\n\n1. Read the ${a}.\n` +
    `2. Run \`bash scripts/run.sh\` on the ${b}.\n3. Check the output file.\n`;
}

/**
 * Skill number `i` as a loaded skill (nothing on disk).
 *
 * @param i The skill's number.
 * @param root Where its folder would be.
 * @returns The skill.
 */
export function manySkill(i: number, root = "/skills"): Skill {
  const name = manySkillName(i);
  return {
    name,
    description: manySkillDescription(i),
    basePath: `${root}/${name}`,
    location: `${root}/${name}/SKILL.md`,
    instructions: manySkillInstructions(i),
    frontMatter: { name, description: manySkillDescription(i) },
    warnings: [],
  };
}

/** `count` generated skills. */
export function manySkills(count: number, root = "/skills"): Skill[] {
  return Array.from({ length: count }, (_, i) => manySkill(i, root));
}

/** The `SKILL.md` text of skill number `i`. */
export function manySkillText(i: number): string {
  return `---\nname: ${manySkillName(i)}\ndescription: ${
    manySkillDescription(i)
  }\n---\n${manySkillInstructions(i)}`;
}

/** Writes `count` generated skill folders under `root`. */
export async function writeManySkills(
  root: string,
  count: number,
): Promise<void> {
  for (let i = 0; i < count; i++) {
    const dir = `${root}/${manySkillName(i)}`;
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(`${dir}/SKILL.md`, manySkillText(i));
  }
}

const QUERY_FORMS: readonly ((a: string, b: string) => string)[] = [
  (a, b) => `help me make a ${a} with the ${b} in it`,
  (a, b) => `I need to convert my ${b} into a ${a}`,
  (a, b) => `fix the ${a}s that involve ${b}s`,
  (a, b) => `summarise this ${b} ${a} for me`,
  (a, b) => `export the ${a} together with its ${b} data`,
  (a, b) => `check the ${b}s of a ${a}`,
];

/**
 * A query a user might write for skill number `i`: its two topic words in a
 * sentence (in either order, sometimes plural), among words every skill's
 * description shares.
 *
 * @param i The skill's number.
 * @returns The query.
 */
export function manySkillQuery(i: number): string {
  const [a, b] = topicsOf(i);
  return QUERY_FORMS[i % QUERY_FORMS.length]!(a, b);
}
