// Server state shared by the pages: cached by TanStack Query under these keys, refetched when
// an action changes it (`invalidateQueries`), never by counters passed down the tree.
import { QueryClient, useQuery } from "@tanstack/react-query";
import { api, type Category } from "./client";

export const queryClient = new QueryClient({
  defaultOptions: {
    queries: { staleTime: 10_000, retry: 1 },
  },
});

export const keys = {
  /** Everything about chats: the lists (any filter) and each chat's detail. */
  chats: ["chats"] as const,
  chatList: (categoryId: string, search: string, archived: boolean) =>
    ["chats", "list", categoryId, search, archived] as const,
  chat: (chatId: string) => ["chats", "detail", chatId] as const,
  /** A chat someone shared by link (its header, and its messages under it). */
  shared: (shareId: string) => ["shared", shareId] as const,
  /** Document lists (the reader's, the shared ones), each with the pages shown. */
  documents: ["documents"] as const,
  categories: ["categories"] as const,
  collections: ["collections"] as const,
  /** The kinds of file the server reads (they change only with the server). */
  formats: ["formats"] as const,
  /** Collections others added the reader to, waiting for their answer. */
  invitations: ["collections", "invitations"] as const,
};

/** After an answer, a rename, a move or a deletion: lists and details are read again. */
export function refreshChats(): Promise<void> {
  return queryClient.invalidateQueries({ queryKey: keys.chats });
}

/** After an upload or a change to a document: every document list is read again. */
export function refreshDocuments(): Promise<void> {
  return queryClient.invalidateQueries({ queryKey: keys.documents });
}

/** The reader's categories (the list, the chat header, the categories dialog share one). */
export function useCategories(): Category[] {
  return (
    useQuery({
      queryKey: keys.categories,
      queryFn: async () => (await api.GET("/api/v1/categories", { params: { query: { limit: 100 } } })).data?.items ?? [],
    }).data ?? []
  );
}
