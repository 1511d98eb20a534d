const KEY = "taskq.console.token";

/**
 * The signed-in bearer token, in sessionStorage: it lasts while the tab does and is never sent to
 * another tab or written to disk by the console.
 */
export const session = {
  token(): string | null {
    return sessionStorage.getItem(KEY);
  },
  signIn(token: string): void {
    sessionStorage.setItem(KEY, token);
  },
  signOut(): void {
    sessionStorage.removeItem(KEY);
  },
};
