// PATCH /messages/{message_id} (edit, move, resolve: actions/message-edit.ts)
// and GET /messages/{message_id}/history (the edit snapshots).
import { updateMessage } from "../actions/message-edit.ts";
import { actorFor } from "../actions/actor.ts";
import { editSnapshots, PROPAGATE_MODES, visibleSnapshots, type EditHistoryEntry } from "../domain/message-edit.ts";
import { topicOrSubject } from "../domain/messages.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { badRequest } from "../errors.ts";
import { param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";
import { accessibleMessage } from "../queries/messages.ts";

export const messageEditRoutes = [
  defineRoute({
    method: "PATCH",
    path: "/messages/:message_id",
    auth: "api",
    params: {
      message_id: param.int().required(),
      content: param.string(),
      topic: param.string(),
      subject: param.string(),
      stream_id: param.int(),
      propagate_mode: param.choice(PROPAGATE_MODES).default("change_one"),
      send_notification_to_old_thread: param.bool().default(false),
      send_notification_to_new_thread: param.bool().default(true),
      prev_content_sha256: param.string(),
    },
    handler: async (request, p) => {
      const result = await updateMessage(request.services, request.realm, request.user, {
        messageId: p.message_id,
        content: p.content,
        topic: topicOrSubject(p.topic, p.subject),
        streamId: p.stream_id,
        propagateMode: p.propagate_mode,
        notifyOldThread: p.send_notification_to_old_thread,
        notifyNewThread: p.send_notification_to_new_thread,
        prevContentSha256: p.prev_content_sha256,
      });
      return { detached_uploads: result.detached_uploads };
    },
  }),

  defineRoute({
    method: "GET",
    path: "/messages/:message_id/history",
    auth: "api",
    params: {
      message_id: param.int().required(),
      allow_empty_topic_name: param.bool().default(false),
    },
    handler: async (request, p) => {
      const settings = parseRealmSettings(request.realm.settings);
      if (settings.message_edit_history_visibility_policy === "none") throw badRequest("Message edit history is disabled in this organization");
      const db = request.services.storage.db;
      const { row } = await accessibleMessage(db, request.realm.id, await actorFor(db, request.user), p.message_id);
      const stored = row.edit_history === null ? [] : (JSON.parse(row.edit_history) as EditHistoryEntry[]);
      const snapshots = editSnapshots(
        { content: row.content, rendered_content: row.rendered_content, topic: row.topic, date_sent: row.date_sent, sender_id: row.sender_id, isChannelMessage: row.channel_id !== null },
        stored,
        (topic) => (topic === "" && !p.allow_empty_topic_name ? settings.empty_topic_display_name : topic),
      );
      return { message_history: visibleSnapshots(snapshots, stored, settings.message_edit_history_visibility_policy) };
    },
  }),
];
