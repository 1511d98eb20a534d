/** A case-name glob as a RegExp: "*" matches any run of characters (slashes included). */
export function globToRegExp(glob: string): RegExp {
  const body = glob
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\/]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${body}$`);
}
