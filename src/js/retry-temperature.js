// The temperature of a batch's retries, shared by the providers the package makes.

/** How much a batch's temperature is raised at each retry (see `temperatureFor`). */
const RETRY_TEMPERATURE_STEP = 0.3;

/**
 * The temperature of one request: `temperature`, except for a batch's retries
 * (`request.attempt` >= 1), sent at `max(temperature, min(1, temperature + 0.3 *
 * attempt))`: a model at a low temperature answers the same prompt the same way, so a
 * retry at the same one would repeat the reply that failed. The raised value is rounded
 * to 9 decimals, so that 0.3 * 3 goes out as 0.9, not 0.8999999999999999.
 * @param {number} temperature
 * @param {{ isBatch?: boolean, attempt?: number }} request
 */
export function temperatureFor(temperature, request) {
  const attempt = request.attempt;
  if (!request.isBatch || typeof attempt !== "number" || !(attempt >= 1)) return temperature;
  const raised = Math.min(1, temperature + RETRY_TEMPERATURE_STEP * attempt);
  return Math.max(temperature, Math.round(raised * 1e9) / 1e9);
}
