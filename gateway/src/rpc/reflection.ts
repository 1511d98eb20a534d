import {
  create,
  type DescFile,
  type DescMessage,
  type DescService,
  fromBinary,
  type MessageInitShape,
  toBinary,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import {
  type ServerReflection,
  type ServerReflectionRequest,
  ServerReflectionRequestSchema,
  ServerReflectionRequestV1AlphaSchema,
  ServerReflectionResponseSchema,
  ServerReflectionResponseV1AlphaSchema,
  type ServerReflectionV1Alpha,
} from "@taskq/sdk/internal";

/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha) over the given services: lists them and
 * answers each file or symbol asked with its file descriptor followed by every file it imports,
 * transitively, so clients such as grpcurl need no .proto files. Behind the auth interceptor: any valid
 * token when tokens are configured (auth/roles.ts).
 */
export function reflectionServices(services: readonly DescService[]): {
  v1: ServiceImpl<typeof ServerReflection>;
  v1alpha: ServiceImpl<typeof ServerReflectionV1Alpha>;
} {
  const index = indexFiles(services);
  return {
    v1: {
      async *serverReflectionInfo(requests) {
        for await (const req of requests) yield create(ServerReflectionResponseSchema, answer(index, req));
      },
    },
    v1alpha: {
      async *serverReflectionInfo(requests) {
        // v1alpha is v1 under another package name, field for field: answered through v1's encoding.
        for await (const req of requests) {
          const asV1 = fromBinary(
            ServerReflectionRequestSchema,
            toBinary(ServerReflectionRequestV1AlphaSchema, req),
          );
          const out = toBinary(
            ServerReflectionResponseSchema,
            create(ServerReflectionResponseSchema, answer(index, asV1)),
          );
          yield fromBinary(ServerReflectionResponseV1AlphaSchema, out);
        }
      },
    },
  };
}

interface FileIndex {
  services: readonly string[];
  byName: ReadonlyMap<string, DescFile>;
  bySymbol: ReadonlyMap<string, DescFile>;
  /** Each file's encoded descriptor, then those of its imports (transitively), each once. */
  closure: (file: DescFile) => Uint8Array[];
}

function indexFiles(services: readonly DescService[]): FileIndex {
  const byName = new Map<string, DescFile>();
  const bySymbol = new Map<string, DescFile>();
  const addMessage = (file: DescFile, m: DescMessage) => {
    bySymbol.set(m.typeName, file);
    for (const f of m.fields) bySymbol.set(`${m.typeName}.${f.name}`, file);
    for (const e of m.nestedEnums) bySymbol.set(e.typeName, file);
    for (const n of m.nestedMessages) addMessage(file, n);
  };
  const addFile = (file: DescFile) => {
    if (byName.has(file.name)) return;
    byName.set(file.name, file);
    for (const m of file.messages) addMessage(file, m);
    for (const e of file.enums) bySymbol.set(e.typeName, file);
    for (const s of file.services) {
      bySymbol.set(s.typeName, file);
      for (const m of s.methods) bySymbol.set(`${s.typeName}.${m.name}`, file);
    }
    for (const d of file.dependencies) addFile(d);
  };
  for (const s of services) addFile(s.file);
  const encoded = new Map<DescFile, Uint8Array>();
  const bytesOf = (file: DescFile) => {
    let bytes = encoded.get(file);
    if (!bytes) {
      bytes = toBinary(FileDescriptorProtoSchema, file.proto);
      encoded.set(file, bytes);
    }
    return bytes;
  };
  const closure = (file: DescFile) => {
    const seen = new Set<DescFile>();
    const walk = (f: DescFile) => {
      if (seen.has(f)) return;
      seen.add(f);
      for (const d of f.dependencies) walk(d);
    };
    walk(file);
    // The asked file first, as clients expect.
    return [file, ...[...seen].filter((f) => f !== file)].map(bytesOf);
  };
  return { services: services.map((s) => s.typeName), byName, bySymbol, closure };
}

/** One response's content (the caller adds its version's type). */
function answer(
  index: FileIndex,
  req: ServerReflectionRequest,
): MessageInitShape<typeof ServerReflectionResponseSchema> {
  const base = { validHost: req.host, originalRequest: req };
  const files = (file: DescFile | undefined, what: string) =>
    file
      ? {
          ...base,
          messageResponse: {
            case: "fileDescriptorResponse" as const,
            value: { fileDescriptorProto: index.closure(file) },
          },
        }
      : notFound(base, what);
  const r = req.messageRequest;
  switch (r.case) {
    case "listServices":
      return {
        ...base,
        messageResponse: {
          case: "listServicesResponse" as const,
          value: { service: index.services.map((name) => ({ name })) },
        },
      };
    case "fileByFilename":
      return files(index.byName.get(r.value), `file ${r.value}`);
    case "fileContainingSymbol":
      return files(index.bySymbol.get(r.value), `symbol ${r.value}`);
    case "fileContainingExtension":
      // None of the served files declares an extension.
      return notFound(base, `extension ${r.value.extensionNumber} of ${r.value.containingType}`);
    case "allExtensionNumbersOfType":
      return index.bySymbol.has(r.value)
        ? {
            ...base,
            messageResponse: {
              case: "allExtensionNumbersResponse" as const,
              value: { baseTypeName: r.value, extensionNumber: [] },
            },
          }
        : notFound(base, `type ${r.value}`);
    default:
      return {
        ...base,
        messageResponse: {
          case: "errorResponse" as const,
          value: { errorCode: Code.InvalidArgument, errorMessage: "message_request is required" },
        },
      };
  }
}

function notFound(base: object, what: string) {
  return {
    ...base,
    messageResponse: {
      case: "errorResponse" as const,
      value: { errorCode: Code.NotFound, errorMessage: `${what} not found` },
    },
  };
}
