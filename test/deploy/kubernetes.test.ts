/**
 * deploy/kubernetes/, checked without a cluster: every resource kustomization.yaml lists parses
 * and fits the others (selectors, names, the image, the Secret's keys), the probes name the
 * service's /readyz and /healthz, the pods run as the image's user with a read-only root, the
 * ConfigMap's settings are ones the service loads, and the Secret template cannot start a server.
 */
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { parseAllDocuments } from 'yaml'
import { loadConfig, SETTINGS } from '../../src/config.ts'
import { dockerfileInstructions } from '../support/docker-context.ts'
import { ROOT } from '../support/process.ts'

const DIR = join(ROOT, 'deploy', 'kubernetes')

/** A manifest as parsed: its fields are checked one by one below. */
type Manifest = Record<string, any>

function load(file: string): Manifest[] {
  const docs = parseAllDocuments(readFileSync(join(DIR, file), 'utf8'))
  for (const doc of docs) assert.deepEqual(doc.errors, [], `${file} parses`)
  return docs.map((doc) => doc.toJS() as Manifest)
}

const kustomization = load('kustomization.yaml')[0]!
const resources: Manifest[] = (kustomization.resources as string[]).flatMap((file) => load(file))
const byKind = (kind: string) => {
  const found = resources.filter((r) => r.kind === kind)
  assert.equal(found.length, 1, `one ${kind}`)
  return found[0]!
}
const secretTemplate = load('secret.template.yaml')[0]!

/** The image's user and port, from deploy/docker/Dockerfile. */
const dockerfile = dockerfileInstructions(join(ROOT, 'deploy', 'docker', 'Dockerfile'))
const imageUid = Number(/KNS_UID=(\d+)/.exec(dockerfile.find((i) => /install\S* user$/.test(i.args))!.args)![1])
const imageEnv = dockerfile.find((i) => i.keyword === 'ENV')!.args
const imagePort = Number(/\bPORT=(\d+)/.exec(imageEnv)![1])
const imageDataDir = /\bDATA_DIR=(\S+)/.exec(imageEnv)![1]

test('kustomization.yaml lists files that exist, each a resource with a kind and a name; the Secret template is not among them', () => {
  assert.equal(kustomization.kind, 'Kustomization')
  for (const file of kustomization.resources as string[]) assert.ok(existsSync(join(DIR, file)), file)
  for (const resource of resources) {
    assert.equal(typeof resource.apiVersion, 'string')
    assert.equal(typeof resource.metadata?.name, 'string', `${resource.kind} has a name`)
  }
  assert.deepEqual(resources.map((r) => r.kind).sort(), ['ConfigMap', 'Deployment', 'Job', 'PodDisruptionBudget', 'Service'])
  assert.ok(!(kustomization.resources as string[]).includes('secret.template.yaml'), 'an apply never replaces the real KNS_SECRET')
  assert.deepEqual((kustomization.images as Manifest[]).map((i) => i.name), ['kns'])
})

test('the Deployment: three replicas, probes on /readyz and /healthz, non-root as the image\'s user, read-only root, resources, a drain longer than the server\'s', () => {
  const deployment = byKind('Deployment')
  assert.equal(deployment.spec.replicas, 3)
  const labels = deployment.spec.selector.matchLabels as Record<string, string>
  const pod = deployment.spec.template
  for (const [key, value] of Object.entries(labels)) assert.equal(pod.metadata.labels[key], value, `the pods carry ${key}`)
  assert.equal(deployment.spec.strategy.rollingUpdate.maxUnavailable, 0)

  const spec = pod.spec
  assert.equal(spec.automountServiceAccountToken, false)
  assert.deepEqual(spec.securityContext, { runAsNonRoot: true, runAsUser: imageUid, runAsGroup: imageUid, fsGroup: imageUid, seccompProfile: { type: 'RuntimeDefault' } })
  assert.ok(spec.terminationGracePeriodSeconds > 10 + 5, 'over the preStop pause and the server\'s 10 s drain')
  assert.equal(spec.containers.length, 1)
  const container = spec.containers[0]
  assert.equal(container.image, 'kns')
  assert.deepEqual(container.args, ['serve'])
  assert.deepEqual(container.ports, [{ name: 'http', containerPort: imagePort }])
  assert.deepEqual(container.readinessProbe.httpGet, { path: '/readyz', port: 'http' })
  assert.deepEqual(container.livenessProbe.httpGet, { path: '/healthz', port: 'http' })
  assert.deepEqual(container.startupProbe.httpGet, { path: '/healthz', port: 'http' })
  assert.ok(container.startupProbe.periodSeconds * container.startupProbe.failureThreshold >= 60, 'a minute to start (migrations)')
  assert.deepEqual(container.lifecycle.preStop.exec.command, ['sleep', '5'])
  assert.deepEqual(container.securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } })
  assert.ok(container.resources.requests.cpu && container.resources.requests.memory && container.resources.limits.memory)
  // The read-only root leaves these writable: /tmp and the image's DATA_DIR.
  const mounts = (container.volumeMounts as Manifest[]).map((m) => m.mountPath).sort()
  assert.deepEqual(mounts, ['/tmp', imageDataDir].sort())
  const volumes = new Set((spec.volumes as Manifest[]).map((v) => v.name))
  for (const mount of container.volumeMounts as Manifest[]) assert.ok(volumes.has(mount.name), mount.name)

  // Settings from the ConfigMap, secrets from the Secret the template describes.
  assert.deepEqual(container.envFrom, [{ configMapRef: { name: byKind('ConfigMap').metadata.name } }])
  for (const env of container.env as Manifest[]) {
    assert.equal(env.valueFrom.secretKeyRef.name, secretTemplate.metadata.name)
    assert.equal(env.valueFrom.secretKeyRef.key, env.name)
    assert.ok(env.name in secretTemplate.stringData, `${env.name} is in the Secret template`)
  }
  assert.deepEqual((container.env as Manifest[]).map((e) => e.name).sort(), ['DATABASE_URL', 'KNS_SECRET'])
})

test('the Service and the PodDisruptionBudget select the Deployment\'s pods; the migration Job runs kns migrate as the same user', () => {
  const labels = byKind('Deployment').spec.selector.matchLabels
  const service = byKind('Service')
  assert.deepEqual(service.spec.selector, labels)
  assert.deepEqual(service.spec.ports.map((p: Manifest) => p.targetPort), ['http'])
  const pdb = byKind('PodDisruptionBudget')
  assert.deepEqual(pdb.spec.selector.matchLabels, labels)
  assert.ok(pdb.spec.maxUnavailable >= 1 && pdb.spec.maxUnavailable < byKind('Deployment').spec.replicas)

  const job = byKind('Job')
  const spec = job.spec.template.spec
  assert.equal(spec.restartPolicy, 'Never')
  assert.equal(spec.securityContext.runAsNonRoot, true)
  assert.equal(spec.securityContext.runAsUser, imageUid)
  const container = spec.containers[0]
  assert.equal(container.image, 'kns')
  assert.equal(container.args[0], 'migrate')
  assert.equal(container.securityContext.readOnlyRootFilesystem, true)
  assert.deepEqual(container.env.map((e: Manifest) => `${e.name}:${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`), [`DATABASE_URL:${secretTemplate.metadata.name}/DATABASE_URL`])
  // The migration Job's pods are not the Service's.
  const jobLabels = job.spec.template.metadata.labels as Record<string, string>
  assert.ok(Object.entries(labels).some(([key, value]) => jobLabels[key] !== value), 'the Service does not select the Job\'s pod')
})

test('the ConfigMap holds settings the service loads; the Secret template, applied as it is, is refused at start', () => {
  const data = byKind('ConfigMap').data as Record<string, string>
  // docs/configuration.md is generated from these definitions (test/docs/configuration.test.ts).
  const documented = new Set(SETTINGS.map((setting) => setting.name))
  for (const key of Object.keys(data)) assert.ok(documented.has(key), `${key} is a documented setting`)
  const config = loadConfig({ ...data, KNS_SECRET: 'k'.repeat(32), DATABASE_URL: 'postgres://kns@db:5432/kns' })
  assert.equal(config.publicBaseUrl, data.PUBLIC_BASE_URL)

  assert.equal(secretTemplate.kind, 'Secret')
  assert.throws(() => loadConfig({ ...data, ...secretTemplate.stringData }), /KNS_SECRET must be at least 32 bytes/)
})
