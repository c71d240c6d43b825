// The demo page's "video": fills the cue list #bp-subtitles over time, as a player's
// transcript would. 40 cues, one every 250 ms, the first 500 ms after the page loaded;
// each is <div class="cue" data-cue="N">text</div> (N = 1..40). When the last cue is in,
// <html data-cues-done="40">.
//
// For quicker runs the URL may override the timing: ?cueStart=MS&cueInterval=MS.
(() => {
  "use strict";

  const CUES = [
    "Good evening, and welcome aboard the night train to Hamburg.",
    "It's twenty to ten, and the platform is still busy.",
    "Most of these people have been waiting for this trip for weeks.",
    "Let's find our carriage. We're in number 27.",
    "The attendant checks our names against a printed list.",
    "Breakfast at seven? Yes, please. Coffee, not tea.",
    "So this is the compartment: two beds, a sink and a tiny ladder.",
    "It's smaller than I expected, but it's surprisingly clean.",
    "There's a towel, a bottle of water and even slippers.",
    "And here is the secret weapon: a pair of earplugs.",
    "We're moving. Right on time, to the minute.",
    "Vienna slides past the window, all lights and rain.",
    "The dining car closed years ago, so we brought sandwiches.",
    "Our neighbours are a family from Graz on their way to the sea.",
    "Their youngest has already claimed the top bunk.",
    "Around midnight, the train stops for a long time.",
    "That's the locomotive being changed. Nothing to worry about.",
    "I try to sleep. The rocking is gentler than I thought.",
    "Somewhere in Bavaria, I wake up and look outside.",
    "Fields, a single lit window, and then darkness again.",
    "Half past five. The sky is starting to turn grey.",
    "The attendant knocks: breakfast in an hour!",
    "A quick wash in the sink. Not luxurious, but it works.",
    "Here it comes: rolls, butter, jam and very hot coffee.",
    "Honestly, this is the best breakfast view I've ever had.",
    "We're running along a river now, mist on the water.",
    "Our neighbours are packing. The kids are still asleep.",
    "Twenty minutes to Hamburg, according to the screen.",
    "Did I sleep well? Better than on most flights, that's for sure.",
    "Would I do it again? Absolutely. Probably next month.",
    "The only downside: booking took three different websites.",
    "And the return trip was sold out, so I'm flying back.",
    "That's the paradox of the night train in one sentence.",
    "Everyone wants a bed, and there aren't enough of them.",
    "We're slowing down. Hamburg central station, on time.",
    "Thank you for travelling with us, says the attendant.",
    "Out onto the platform, bags in hand, fully awake.",
    "It's eight in the morning and the whole day is ahead.",
    "That, in the end, is what people are paying for.",
    "From Hamburg, goodbye, and see you on the next train. 🚆",
  ];

  const params = new URLSearchParams(location.search);
  const ms = (name, fallback) => {
    const value = Number(params.get(name));
    return params.has(name) && Number.isFinite(value) && value >= 0 ? value : fallback;
  };
  const START_MS = ms("cueStart", 500);
  const INTERVAL_MS = ms("cueInterval", 250);

  function run() {
    const list = document.getElementById("bp-subtitles");
    const current = document.getElementById("current-cue");
    if (!list) return;
    // Like a player's transcript, stay pinned to the newest line while lines (or
    // translations added under them) come in, unless the reader scrolled up.
    let pinned = true;
    list.addEventListener("scroll", () => {
      pinned = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    });
    new MutationObserver(() => {
      if (pinned) list.scrollTop = list.scrollHeight;
    }).observe(list, { childList: true, subtree: true });
    let index = 0;
    const next = () => {
      const cue = document.createElement("div");
      cue.className = "cue";
      cue.dataset.cue = String(index + 1);
      cue.textContent = CUES[index];
      list.append(cue);
      if (current) current.textContent = CUES[index];
      index++;
      if (index < CUES.length) {
        setTimeout(next, INTERVAL_MS);
      } else {
        document.documentElement.dataset.cuesDone = String(CUES.length);
      }
    };
    setTimeout(next, START_MS);
  }

  if (document.readyState === "complete") run();
  else window.addEventListener("load", run, { once: true });
})();
