/* Every page's script: says script is on (so script-only controls show and
   their no-script stand-ins hide). Pages work without it. */
document.documentElement.classList.add("js");
