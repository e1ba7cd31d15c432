// The organization's channel folders (/register's channel_folders, kept by
// channel_folder events): the sidebar groups your channels by them.
import { create } from "zustand";

export interface ChannelFolder {
  id: number;
  name: string;
  order: number;
  is_archived: boolean;
}

export const useChannelFolders = create<{ byId: Record<number, ChannelFolder> }>(() => ({ byId: {} }));

export const channelFoldersStore = {
  load(folders: ChannelFolder[] | undefined): void {
    useChannelFolders.setState({ byId: Object.fromEntries((folders ?? []).map((f) => [f.id, f])) });
  },
  /** A channel_folder event: add, update (one property in `data`) or reorder. */
  apply(event: { op?: string; channel_folder?: ChannelFolder; channel_folder_id?: number; data?: Partial<ChannelFolder>; order?: number[] }): void {
    useChannelFolders.setState((s) => {
      const byId = { ...s.byId };
      if (event.op === "add" && event.channel_folder) byId[event.channel_folder.id] = event.channel_folder;
      else if (event.op === "update" && event.channel_folder_id !== undefined && byId[event.channel_folder_id]) byId[event.channel_folder_id] = { ...byId[event.channel_folder_id]!, ...event.data };
      else if (event.op === "reorder" && event.order) event.order.forEach((id, position) => byId[id] && (byId[id] = { ...byId[id]!, order: position }));
      return { byId };
    });
  },
};

/** The folders to show, in the organization's order. */
export function visibleFolders(byId: Record<number, ChannelFolder>): ChannelFolder[] {
  return Object.values(byId)
    .filter((f) => !f.is_archived)
    .sort((a, b) => a.order - b.order || a.id - b.id);
}
