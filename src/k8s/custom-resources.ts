/**
 * A small typed client for the uhlp custom resources (AppDefinition, SandboxPool),
 * shared by the operator, the AppDefinition watcher and the tests. Every write names
 * its field manager, so `metadata.managedFields` tells which process wrote what.
 */
import {
  ApiException,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, APP_API_VERSION, APP_KIND, type AppSpec } from '../apps/schema/app-definition-schema.js';
import {
  APP_DEFINITION_PLURAL,
  SANDBOX_POOL_KIND,
  SANDBOX_POOL_PLURAL,
  type AppDefinitionStatus,
  type SandboxPoolSpec,
  type SandboxPoolStatus,
} from '../apps/schema/sandbox-pool-schema.js';

/**
 * The metadata fields uhlp reads and writes; the API server owns the rest. Custom
 * objects arrive as plain JSON, so timestamps are RFC 3339 strings, not Dates.
 */
export interface ObjectMeta {
  name: string;
  namespace: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  deletionTimestamp?: string;
  creationTimestamp?: string;
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface AppDefinitionResource {
  apiVersion: typeof APP_API_VERSION;
  kind: typeof APP_KIND;
  metadata: ObjectMeta;
  spec: AppSpec;
  status?: AppDefinitionStatus;
}

export interface SandboxPoolResource {
  apiVersion: typeof APP_API_VERSION;
  kind: typeof SANDBOX_POOL_KIND;
  metadata: ObjectMeta;
  spec: SandboxPoolSpec;
  status?: SandboxPoolStatus;
}

/** Any custom object as it comes over the wire. */
export interface CustomObject {
  apiVersion?: string;
  kind?: string;
  metadata?: Partial<ObjectMeta>;
}

/** Which resource a call is about. */
export interface ResourceKind {
  kind: string;
  plural: string;
}

export const APP_DEFINITION: ResourceKind = { kind: APP_KIND, plural: APP_DEFINITION_PLURAL };
export const SANDBOX_POOL: ResourceKind = { kind: SANDBOX_POOL_KIND, plural: SANDBOX_POOL_PLURAL };

/** The API path a resource is listed and watched at, in one namespace or (undefined) all of them. */
export function resourcePath(resource: ResourceKind, namespace: string | undefined): string {
  const base = `/apis/${API_GROUP}/${API_VERSION}`;
  return namespace === undefined ? `${base}/${resource.plural}` : `${base}/namespaces/${namespace}/${resource.plural}`;
}

/** The HTTP status of a failed API call, or undefined when the call did not reach the server. */
export function apiStatus(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export interface CustomResourceClientOptions {
  /** Field manager recorded in managedFields for every write. @defaultValue `uhlp` */
  fieldManager?: string;
}

/** Thin typed calls over CustomObjectsApi; errors are the client's ApiException (see apiStatus). */
export class CustomResourceClient {
  readonly fieldManager: string;
  private readonly api: CustomObjectsApi;

  constructor(kubeConfig: KubeConfig, options: CustomResourceClientOptions = {}) {
    this.api = kubeConfig.makeApiClient(CustomObjectsApi);
    this.fieldManager = options.fieldManager ?? 'uhlp';
  }

  private target(resource: ResourceKind, namespace: string): { group: string; version: string; plural: string; namespace: string } {
    return { group: API_GROUP, version: API_VERSION, plural: resource.plural, namespace };
  }

  /** Lists in one namespace, or in all namespaces when `namespace` is undefined. */
  async list<T>(resource: ResourceKind, namespace: string | undefined, labelSelector?: string): Promise<{ items: T[]; resourceVersion: string }> {
    const list = (
      namespace === undefined
        ? await this.api.listCustomObjectForAllNamespaces({ group: API_GROUP, version: API_VERSION, resourcePlural: resource.plural, labelSelector })
        : await this.api.listNamespacedCustomObject({ ...this.target(resource, namespace), labelSelector })
    ) as { items: T[]; metadata?: { resourceVersion?: string } };
    return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
  }

  /** The object, or undefined when it does not exist. */
  async get<T>(resource: ResourceKind, namespace: string, name: string): Promise<T | undefined> {
    try {
      return (await this.api.getNamespacedCustomObject({ ...this.target(resource, namespace), name })) as T;
    } catch (error) {
      if (apiStatus(error) === 404) return undefined;
      throw error;
    }
  }

  async create<T extends CustomObject>(resource: ResourceKind, object: T): Promise<T> {
    const namespace = object.metadata?.namespace;
    if (namespace === undefined) throw new Error(`create ${resource.kind}: metadata.namespace is required`);
    return (await this.api.createNamespacedCustomObject({ ...this.target(resource, namespace), body: object, fieldManager: this.fieldManager })) as T;
  }

  /** JSON merge patch of the object (spec and metadata; status is a separate subresource). */
  async patch<T>(resource: ResourceKind, namespace: string, name: string, body: object): Promise<T> {
    return (await this.api.patchNamespacedCustomObject(
      { ...this.target(resource, namespace), name, body, fieldManager: this.fieldManager },
      MERGE_PATCH,
    )) as T;
  }

  /** JSON merge patch of the status subresource. */
  async patchStatus<T>(resource: ResourceKind, namespace: string, name: string, status: object): Promise<T> {
    return (await this.api.patchNamespacedCustomObjectStatus(
      { ...this.target(resource, namespace), name, body: { status }, fieldManager: this.fieldManager },
      MERGE_PATCH,
    )) as T;
  }

  /** JSON merge patch of the scale subresource: exactly what `kubectl scale` sends. */
  async scale(resource: ResourceKind, namespace: string, name: string, replicas: number): Promise<void> {
    await this.api.patchNamespacedCustomObjectScale(
      { ...this.target(resource, namespace), name, body: { spec: { replicas } }, fieldManager: this.fieldManager },
      MERGE_PATCH,
    );
  }

  /** Deletes the object; true when it was there. */
  async delete(resource: ResourceKind, namespace: string, name: string): Promise<boolean> {
    try {
      await this.api.deleteNamespacedCustomObject({ ...this.target(resource, namespace), name });
      return true;
    } catch (error) {
      if (apiStatus(error) === 404) return false;
      throw error;
    }
  }
}
