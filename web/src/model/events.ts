// Applies one server event to the stores. The only place, after /register,
// where the client's state changes.
import type { Message, ServerEvent } from "../api/types.ts";
import { channelName, channelsStore } from "./channels.ts";
import { emojiStore } from "./emoji.ts";
import { notificationsStore } from "./notifications.ts";
import { allChannelsStore } from "./all-channels.ts";
import { channelFoldersStore } from "./channel-folders.ts";
import { settingsStore } from "./settings.ts";
import { userStatusStore } from "./user-status.ts";
import { mutingStore } from "./muting.ts";
import { playgroundsStore } from "./playgrounds.ts";
import { messagesStore } from "./messages.ts";
import { followMove, type MoveEvent } from "./conversation-moves.ts";
import { permissionsStore } from "./permissions.ts";
import { presenceStore } from "./presence.ts";
import { profileFieldsStore } from "./profile-fields.ts";
import { reading } from "./reading.ts";
import { realmStore } from "./realm.ts";
import { topicsStore } from "./topics.ts";
import { typingStore } from "./typing.ts";
import { unreadsStore } from "./unreads.ts";
import { usersStore, useUsers } from "./users.ts";
import { widgetsStore } from "./widgets.ts";
import { recentStore } from "./recent.ts";
import { dmConversationsStore } from "./dm-conversations.ts";
import { organizationStore } from "./organization.ts";
import { draftsStore } from "./drafts.ts";
import { scheduledStore } from "./scheduled.ts";
import { snippetsStore } from "./snippets.ts";

export function applyEvent(event: ServerEvent): void {
  const selfId = useUsers.getState().selfId;
  permissionsStore.applyEvent(event);
  organizationStore.applyEvent(event);
  switch (event.type) {
    case "message": {
      const message = { ...(event.message as Message), flags: (event.flags as string[]) ?? [] };
      messagesStore.addMessage(message, (event.local_message_id ?? event.local_id) as string | undefined);
      unreadsStore.addMessage(message, selfId);
      recentStore.addMessage(message);
      dmConversationsStore.noteMessage(message, selfId);
      if (message.type === "stream" && message.stream_id !== undefined) topicsStore.noteMessage(message.stream_id, message.subject, message.id);
      notificationsStore.notice(message, message.flags ?? [], selfId, message.type === "stream" ? `#${channelName(message.stream_id!) ?? ""} > ${message.subject}` : "direct message");
      break;
    }
    case "realm_emoji":
      if (event.op === "update") emojiStore.setRealmEmoji(event.realm_emoji ?? {});
      break;
    case "user_settings": {
      if (event.op === "update") settingsStore.apply(event.property, event.value);
      break;
    }
    case "user_status": {
      userStatusStore.apply(event as unknown as Parameters<typeof userStatusStore.apply>[0]);
      break;
    }
    case "update_message": {
      messagesStore.updateMessage(event as unknown as Parameters<typeof messagesStore.updateMessage>[0]);
      if (event.new_stream_id !== undefined || event.subject !== undefined) {
        const ids: number[] = event.message_ids ?? [event.message_id];
        unreadsStore.move(ids, event.new_stream_id ?? event.stream_id, event.subject ?? event.orig_subject ?? "");
        recentStore.move(ids, event.new_stream_id, event.subject);
        if (event.stream_id !== undefined) topicsStore.invalidate(event.stream_id);
        if (event.new_stream_id !== undefined) topicsStore.invalidate(event.new_stream_id);
        followMove(event as unknown as MoveEvent);
      }
      break;
    }
    case "delete_message": {
      const ids: number[] = event.message_ids ?? [event.message_id];
      messagesStore.deleteMessages(ids);
      unreadsStore.remove(ids);
      recentStore.remove(ids);
      break;
    }
    case "update_message_flags": {
      const op = event.op as "add" | "remove";
      const ids: number[] = event.messages ?? [];
      messagesStore.updateFlags(op, event.flag, ids, event.all === true);
      if (event.flag === "read") {
        if (op === "add") {
          if (event.all) unreadsStore.markAllRead();
          else unreadsStore.markRead(ids);
        } else {
          reading.forget(ids);
          if (event.message_details) unreadsStore.markUnread(event.message_details, selfId);
        }
      }
      break;
    }
    case "reaction":
      messagesStore.reaction(event.op as "add" | "remove", event.message_id, {
        emoji_name: event.emoji_name,
        emoji_code: event.emoji_code,
        reaction_type: event.reaction_type,
        user_id: event.user_id,
      });
      break;
    case "submessage":
      widgetsStore.add({ id: event.submessage_id, message_id: event.message_id, sender_id: event.sender_id, msg_type: event.msg_type, content: event.content });
      break;
    case "typing":
      typingStore.apply(event as unknown as Parameters<typeof typingStore.apply>[0], selfId);
      break;
    case "presence":
      if (event.presences) presenceStore.apply(event.presences);
      break;
    case "realm_user":
      if (event.op === "add") usersStore.add(event.person);
      else if (event.op === "update") usersStore.update(event.person);
      else if (event.op === "remove") usersStore.remove(event.person.user_id);
      break;
    case "subscription":
      if (event.op === "add") {
        channelsStore.addSubscriptions(event.subscriptions);
        allChannelsStore.subscribed(event.subscriptions, selfId);
      } else if (event.op === "remove") {
        const ids = (event.subscriptions as { stream_id: number }[]).map((s) => s.stream_id);
        channelsStore.removeSubscriptions(ids);
        allChannelsStore.unsubscribed(ids, selfId);
      } else if (event.op === "update") channelsStore.updateSubscription(event.stream_id, event.property, event.value);
      else if (event.op === "peer_add" || event.op === "peer_remove") allChannelsStore.peers(event.op === "peer_add" ? "add" : "remove", event.stream_ids ?? [], event.user_ids ?? []);
      break;
    case "stream":
      if (event.op === "update") {
        channelsStore.updateChannel(event.stream_id, event.property, event.value);
        allChannelsStore.updated(event.stream_id, event.property, event.value, event.rendered_description !== undefined ? { rendered_description: event.rendered_description } : {});
      } else if (event.op === "delete") {
        const ids = (event.streams as { stream_id: number }[]).map((s) => s.stream_id);
        channelsStore.removeSubscriptions(ids);
        allChannelsStore.deleted(ids);
      } else if (event.op === "create") allChannelsStore.created(event.streams);
      break;
    case "custom_profile_fields":
      profileFieldsStore.load(event.fields);
      break;
    case "channel_folder":
      channelFoldersStore.apply(event);
      break;
    case "muted_users":
      mutingStore.apply(event.muted_users ?? []);
      break;
    case "realm_playgrounds":
      playgroundsStore.load(event.realm_playgrounds);
      break;
    case "user_topic":
      channelsStore.setTopicPolicy(event.stream_id, event.topic_name, event.visibility_policy);
      break;
    case "realm":
      if (event.op === "update") realmStore.applyUpdate(event.property, event.value);
      else if (event.op === "update_dict") realmStore.applyUpdateDict(event.data ?? {});
      break;
    case "scheduled_messages":
      scheduledStore.applyScheduled(event as Parameters<typeof scheduledStore.applyScheduled>[0]);
      break;
    case "reminders":
      scheduledStore.applyReminders(event as Parameters<typeof scheduledStore.applyReminders>[0]);
      break;
    case "saved_snippets":
      snippetsStore.apply(event as Parameters<typeof snippetsStore.apply>[0]);
      break;
    case "drafts":
      draftsStore.apply(event as Parameters<typeof draftsStore.apply>[0]);
      break;
    default:
      // heartbeat and the events this client does not show yet.
      break;
  }
}
