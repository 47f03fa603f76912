// Server state shared by the pages: cached by TanStack Query under these keys, refetched when
// an action changes it (`invalidateQueries`), never by counters passed down the tree.
import { QueryClient, useQuery } from "@tanstack/react-query";
import { api, type Category, type Schemas } from "./client";

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
  /** One collection's documents and members (under `collections`: refreshed with them). */
  collection: (collectionId: string) => ["collections", "detail", collectionId] as const,
  groups: ["groups"] as const,
  /** The reader's quota usage (it changes with uploads and answers). */
  usage: ["usage"] as const,
  apiKeys: ["api-keys"] as const,
  answerDefaults: ["answer-defaults"] as const,
  /** The administrators' views: usage totals, rated answers, users, the audit log. */
  admin: ["admin"] as const,
  /** How people log in here (a company directory, sign-up open or not). */
  loginMethods: ["login-methods"] as const,
};

/** After an answer, a rename, a move or a deletion: lists and details are read again. */
export function refreshChats(): Promise<void> {
  return queryClient.invalidateQueries({ queryKey: keys.chats });
}

/** After a change to a collection (its documents, members, sources): the collections, each
 * one's detail and the invitations are read again. */
export function refreshCollections(): Promise<void> {
  return queryClient.invalidateQueries({ queryKey: keys.collections });
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

/** The collections the reader may see (the chat's "Ask within", the collections page). */
export function useCollections(): Schemas["CollectionRead"][] {
  return (
    useQuery({
      queryKey: keys.collections,
      queryFn: async () => (await api.GET("/api/v1/collections", { params: { query: { limit: 100 } } })).data?.items ?? [],
    }).data ?? []
  );
}

/** Invitations to collections waiting for the reader's answer. */
export function useInvitations(refetchInterval?: number): Schemas["InvitationRead"][] {
  return (
    useQuery({
      queryKey: keys.invitations,
      queryFn: async () => (await api.GET("/api/v1/collections/invitations")).data ?? [],
      refetchInterval,
    }).data ?? []
  );
}

/** The reader's quotas and what they have used. */
export function useUsage(): Schemas["QuotaUsage"] | null {
  return (
    useQuery({
      queryKey: keys.usage,
      queryFn: async () => (await api.GET("/api/v1/users/me/usage")).data ?? null,
    }).data ?? null
  );
}
