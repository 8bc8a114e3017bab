/** An HTTP GET a probe sends; a status from 200 to 399 passes. */
export interface HttpGetAction {
  /**
   * Path to request.
   * @default "/"
   */
  readonly path?: string;
  /**
   * Port to connect to.
   * @default the app's port
   */
  readonly port?: number;
}

/** A TCP connection a probe opens; accepted passes. */
export interface TcpSocketAction {
  /**
   * Port to connect to.
   * @default the app's port
   */
  readonly port?: number;
}

/** A command a probe runs in the container; exit status 0 passes. */
export interface ExecAction {
  /** The command and its arguments (not run in a shell). */
  readonly command: string[];
}

/**
 * A readiness, liveness or startup probe, as in the Kubernetes container spec: give exactly one of
 * `httpGet`, `tcpSocket` or `exec`. Unset timings are Kubernetes' defaults.
 */
export interface Probe {
  /**
   * Pass when an HTTP GET answers 200-399.
   * @default none
   */
  readonly httpGet?: HttpGetAction;
  /**
   * Pass when a TCP connection is accepted.
   * @default none
   */
  readonly tcpSocket?: TcpSocketAction;
  /**
   * Pass when a command exits 0.
   * @default none
   */
  readonly exec?: ExecAction;
  /**
   * Seconds after the container starts before the first probe.
   * @default 0
   */
  readonly initialDelaySeconds?: number;
  /**
   * Seconds between probes.
   * @default 10
   */
  readonly periodSeconds?: number;
  /**
   * Seconds before a probe times out.
   * @default 1
   */
  readonly timeoutSeconds?: number;
  /**
   * Failures in a row that count as failed.
   * @default 3
   */
  readonly failureThreshold?: number;
  /**
   * Successes in a row that count as passed after a failure (1 for liveness and startup probes).
   * @default 1
   */
  readonly successThreshold?: number;
}
