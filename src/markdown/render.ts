// PLACEHOLDER written by the lead engineer only so the message code compiles
// while the real renderer is being built. The Markdown helper: overwrite this
// file freely with the real implementation (same exported API).
export interface MentionUser { id: number; fullName: string }
export interface MarkdownContext {
  realmUrl: string;
  usersByName(name: string): MentionUser[];
  userById(id: number): MentionUser | undefined;
  groupByName(name: string): { id: number; name: string } | undefined;
  channelByName(name: string): { id: number; name: string } | undefined;
}
export interface RenderedMessage {
  html: string;
  mentionedUserIds: number[];
  mentionedGroupIds: number[];
  channelWildcard: boolean;
  topicWildcard: boolean;
  isMeMessage: boolean;
  hasLink: boolean;
  hasImage: boolean;
  hasAttachment: boolean;
  uploadPathIds: string[];
}
const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
export function renderMarkdown(content: string, ctx: MarkdownContext): RenderedMessage {
  const mentioned: number[] = [];
  const groups: number[] = [];
  let channelWildcard = false;
  let topicWildcard = false;
  const html = esc(content).replace(/@(_?)\*\*([^*]+)\*\*/g, (m, silent: string, name: string) => {
    if (["all", "everyone", "channel", "stream"].includes(name)) { if (!silent) channelWildcard = true; return m; }
    if (name === "topic") { if (!silent) topicWildcard = true; return m; }
    const u = ctx.usersByName(name)[0];
    if (u && !silent) mentioned.push(u.id);
    return m;
  }).replace(/@(_?)\*([^*]+)\*/g, (m, silent: string, name: string) => {
    const g = ctx.groupByName(name);
    if (g && !silent) groups.push(g.id);
    return m;
  });
  const uploads = [...content.matchAll(/\/user_uploads\/([^\s)]+)/g)].map((m) => m[1]!);
  return { html: `<p>${html}</p>`, mentionedUserIds: mentioned, mentionedGroupIds: groups, channelWildcard, topicWildcard, isMeMessage: content.startsWith("/me "), hasLink: /https?:\/\//.test(content), hasImage: false, hasAttachment: uploads.length > 0, uploadPathIds: uploads };
}
export function referencedNames(content: string): { userNames: string[]; userIds: number[]; groupNames: string[]; channelNames: string[] } {
  return {
    userNames: [...content.matchAll(/@_?\*\*([^*|]+)/g)].map((m) => m[1]!),
    userIds: [],
    groupNames: [...content.matchAll(/@_?\*([^*]+)\*/g)].map((m) => m[1]!),
    channelNames: [...content.matchAll(/#\*\*([^*>]+)/g)].map((m) => m[1]!),
  };
}
export function topicLinks(_topic: string): { text: string; url: string }[] {
  return [];
}
